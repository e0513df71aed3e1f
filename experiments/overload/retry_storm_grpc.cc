#include "experiments/overload/retry_storm_grpc.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "experiments/overload/open_loop_sender.h"
#include "experiments/overload/overload.h"
#include "grpc_resilience/policy.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

// gRPC's own retry, as a naive client configures it: `max_attempts`,
// RESOURCE_EXHAUSTED and UNAVAILABLE retryable, 10 ms backoff doubling,
// no retryThrottling (no budget).
std::string RetryServiceConfig(int max_attempts) {
  if (max_attempts <= 1) return "";
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
      "retryPolicy": {"maxAttempts": )",
                      max_attempts, R"(, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
      "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE"]}}]})");
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

absl::StatusOr<RetryStormRun> RunOne(const RetryStormConfig& c, const RetryStormServer& s) {
  const Policy policy{s.name, s.throttle_json};
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileJson(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server ", s.name, ": ", policies.status().message()));
  }
  cache_service::BoundedCapacityService service(c.workers, c.workers, c.service_time, c.seed);
  absl::StatusOr<cache_service::GuardedBackend> backend =
      cache_service::ServeGuarded(service, *std::move(policies));
  if (!backend.ok()) return backend.status();
  grpc::ChannelArguments args;
  const std::string config = RetryServiceConfig(s.max_attempts);
  if (!config.empty()) args.SetServiceConfigJSON(config);
  auto stub = cache::v1::CacheService::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", backend->port), grpc::InsecureChannelCredentials(), args));
  OpenLoopSender::WarmUp(*stub);
  const resilience::ServerMethodStats before =
      backend->resilience->Stats("/cache.v1.CacheService/Get");
  Mutex mu;
  RetryStormRun run;
  run.server = s.name;
  run.max_attempts = s.max_attempts;
  {
    OpenLoopSender sender(*stub, c.deadline);
    resilience::SplitMixRandom arrivals(c.seed);
    const double rate = c.load * c.workers / absl::ToDoubleSeconds(c.service_time);
    const absl::Time start = absl::Now() + absl::Milliseconds(50);
    const absl::Time end = start + c.duration;
    absl::Time next = start;
    while (true) {
      next += absl::Seconds(-std::log(1.0 - arrivals.NextUniform()) / rate);
      if (next >= end) break;
      const bool sent = sender.SendAt(
          next, [](grpc::ClientContext&) {},
          [&mu, &run](OpenLoopSender::Answer answer) {
            MutexLock lock(&mu);
            ++(answer == OpenLoopSender::Answer::kRejected       ? run.rejected
               : answer == OpenLoopSender::Answer::kOkInDeadline ? run.ok_in_deadline
                                                                 : run.late);
          });
      if (sent) ++run.offered;
    }
    sender.Drain();
    run.unsent = sender.unsent();
  }
  const resilience::ServerMethodStats after =
      backend->resilience->Stats("/cache.v1.CacheService/Get");
  service.Stop();
  backend->server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  run.admitted = after.admitted - before.admitted;
  run.rejected_concurrency = after.rejected_concurrency - before.rejected_concurrency;
  run.rejected_rate = after.rejected_rate - before.rejected_rate;
  run.rejected_retry = after.rejected_retry - before.rejected_retry;
  MutexLock lock(&mu);
  run.goodput_per_second = run.ok_in_deadline / absl::ToDoubleSeconds(c.duration);
  run.goodput_of_capacity =
      run.goodput_per_second / (c.workers / absl::ToDoubleSeconds(c.service_time));
  run.load_average = LoadAverage();
  return run;
}

}  // namespace

std::vector<RetryStormServer> RetryStormServers(const RetryStormConfig& config) {
  const std::string limit = absl::StrCat(R"("maxConcurrency": )", 2 * config.workers);
  const double capacity = config.workers / absl::ToDoubleSeconds(config.service_time);
  // 10 % under C: at C itself the admitted calls queue without bound in the
  // backend (Poisson arrivals at full utilisation) and end late whatever the
  // retries do.
  const std::string rate =
      absl::StrCat(R"("ratePerSecond": )", 0.9 * capacity, R"(, "burst": )", config.workers);
  const std::string adaptive = R"("adaptive": {})";
  std::vector<RetryStormServer> servers = {{"fixed no_retries", absl::StrCat("{", limit, "}"), 1}};
  for (const auto& [name, limits] : {std::pair<std::string, std::string>{"fixed", limit},
                                     {"adaptive", adaptive},
                                     {"rate", rate}}) {
    servers.push_back({name + " today", absl::StrCat("{", limits, "}"), 3});
    servers.push_back(
        {name + " retry_shedding", absl::StrCat("{", limits, R"(, "retryShedding": {}})"), 3});
    servers.push_back({name + " do_not_retry",
                       absl::StrCat("{", limits, R"(, "retryShedding": {"doNotRetry": true}})"),
                       3});
  }
  return servers;
}

absl::StatusOr<RetryStormResult> RunRetryStorm(const RetryStormConfig& config,
                                               const std::vector<RetryStormServer>& servers) {
  RetryStormResult result;
  result.config = config;
  for (const RetryStormServer& server : servers) {
    absl::StatusOr<RetryStormRun> run = RunOne(config, server);
    if (!run.ok()) return run.status();
    result.runs.push_back(*std::move(run));
  }
  return result;
}

std::string RetryStormToTable(const RetryStormResult& result) {
  const RetryStormConfig& c = result.config;
  std::string out = absl::StrFormat(
      "# retry storm over gRPC: %d workers x %s (C = %.0f/s), offered %.1f C, deadline %s, "
      "%s per run, seed %d\n",
      c.workers, absl::FormatDuration(c.service_time), c.workers / absl::ToDoubleSeconds(c.service_time),
      c.load, absl::FormatDuration(c.deadline), absl::FormatDuration(c.duration), c.seed);
  absl::StrAppendFormat(&out, "%-24s %8s %7s %7s %9s %7s %6s %8s %8s %8s %9s %9s %7s  %s\n",
                        "server", "attempts", "offered", "ok", "rejected", "late", "unsent",
                        "admitted", "rej_conc", "rej_rate", "rej_retry", "goodput/s", "of C",
                        "load avg");
  for (const RetryStormRun& r : result.runs) {
    absl::StrAppendFormat(&out, "%-24s %8d %7d %7d %9d %7d %6d %8d %8d %8d %9d %9.1f %6.1f%%  %s\n",
                          r.server, r.max_attempts, r.offered, r.ok_in_deadline, r.rejected,
                          r.late, r.unsent, r.admitted, r.rejected_concurrency, r.rejected_rate,
                          r.rejected_retry,
                          r.goodput_per_second, 100 * r.goodput_of_capacity, r.load_average);
  }
  return out;
}

std::string RetryStormToJson(const RetryStormResult& result) {
  const RetryStormConfig& c = result.config;
  std::string out = absl::StrFormat(
      "{\"workers\": %d, \"service_time_ms\": %g, \"deadline_ms\": %g, \"duration_s\": %g, "
      "\"load\": %g, \"seed\": %d, \"runs\": [",
      c.workers, absl::ToDoubleMilliseconds(c.service_time), absl::ToDoubleMilliseconds(c.deadline),
      absl::ToDoubleSeconds(c.duration), c.load, c.seed);
  for (size_t i = 0; i < result.runs.size(); ++i) {
    const RetryStormRun& r = result.runs[i];
    absl::StrAppendFormat(
        &out,
        "%s\n  {\"server\": \"%s\", \"max_attempts\": %d, \"offered\": %d, \"ok_in_deadline\": %d, "
        "\"rejected\": %d, \"late\": %d, \"unsent\": %d, \"admitted\": %d, "
        "\"rejected_concurrency\": %d, \"rejected_rate\": %d, \"rejected_retry\": %d, "
        "\"goodput_per_second\": %.1f, "
        "\"goodput_of_capacity\": %.4f, \"load_average\": \"%s\"}",
        i == 0 ? "" : ",", r.server, r.max_attempts, r.offered, r.ok_in_deadline, r.rejected,
        r.late, r.unsent, r.admitted, r.rejected_concurrency, r.rejected_rate, r.rejected_retry,
        r.goodput_per_second, r.goodput_of_capacity, r.load_average);
  }
  out += "\n]}\n";
  return out;
}

}  // namespace overload
