#include "experiments/goodput/live_run.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "experiments/goodput/run_recorder.h"
#include "experiments/goodput/schedule_fault_interceptor.h"
#include "experiments/goodput/scheduled_faults.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"
#include "src/grpc_common/status_conversion.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"

namespace goodput {
namespace {

constexpr char kKey[] = "goodput";
constexpr absl::Duration kCallDeadline = absl::Seconds(5);

struct LiveCall {
  int64_t tick;
  char outcome;  // 's', 'f', 'r'
};

// One policy's callers; returns its calls in tick order or what went wrong.
absl::StatusOr<std::vector<LiveCall>> RunPolicy(const std::string& target, const Policy& policy,
                                                const LiveOptions& options, absl::Time t0) {
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileFor(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.key, ": ", policies.status().message()));
  }
  resilience::ResilientChannelOptions channel_options;
  channel_options.resilience.seed = options.seed;
  channel_options.resilience.name = policy.key;
  const resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      target, grpc::InsecureChannelCredentials(), *policies, std::move(channel_options));
  std::unique_ptr<cache::v1::CacheService::Stub> stub =
      cache::v1::CacheService::NewStub(channel.channel);

  resilience::Mutex mu;
  std::vector<LiveCall> calls;
  absl::Status error;
  const absl::Duration spacing = absl::Seconds(1) / options.calls_per_second;
  std::vector<std::thread> callers;
  for (int c = 0; c < options.callers; ++c) {
    callers.emplace_back([&, c] {
      // Callers are staggered so that their calls interleave evenly.
      absl::Time next = t0 + spacing * c / options.callers;
      cache::v1::GetReq request;
      request.set_key(kKey);
      while (true) {
        absl::SleepFor(next - absl::Now());
        const absl::Time start = std::max(next, absl::Now());
        next += spacing;
        const int64_t tick = absl::ToInt64Milliseconds(start - t0);
        if (start - t0 >= options.length) return;
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
        context.AddMetadata(kRunMetadataKey, policy.key);
        context.AddMetadata(kTickMetadataKey, std::to_string(tick));
        cache::v1::GetResp response;
        const grpc::Status status = stub->Get(&context, request, &response);
        char outcome;
        if (status.ok()) {
          outcome = 's';
        } else if (resilience::RejectedLocally(context)) {
          outcome = 'r';
        } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
          outcome = 'f';
        } else {
          resilience::MutexLock lock(&mu);
          error = absl::InternalError(absl::StrCat(
              "policy ", policy.key, ", call at ", tick, " ms: unexpected ",
              resilience::StatusCodeName(status.error_code()), ": ", status.error_message()));
          return;
        }
        resilience::MutexLock lock(&mu);
        calls.push_back(LiveCall{tick, outcome});
      }
    });
  }
  for (std::thread& t : callers) t.join();
  if (!error.ok()) return error;
  std::stable_sort(calls.begin(), calls.end(),
                   [](const LiveCall& a, const LiveCall& b) { return a.tick < b.tick; });
  return calls;
}

}  // namespace

std::vector<Period> LiveSchedule(absl::Duration length, uint64_t seed) {
  resilience::SplitMixRandom random(seed * 31 + 7);
  auto between = [&random](int lo_ms, int hi_ms) {
    return absl::Milliseconds(lo_ms + static_cast<int64_t>(random.NextUniform() * (hi_ms - lo_ms)));
  };
  std::vector<Period> schedule;
  absl::Duration t;
  bool healthy = true;
  while (t < length) {
    Period p;
    p.kind = healthy ? Period::kHealthy : Period::kDown;
    p.start = t;
    p.end = std::min(length, t + (healthy ? between(2000, 8000) : between(1000, 4000)));
    schedule.push_back(p);
    t = p.end;
    healthy = !healthy;
  }
  return schedule;
}

absl::StatusOr<std::vector<Metrics>> RunLive(const std::vector<Period>& schedule,
                                             const std::vector<Policy>& policies,
                                             const LiveOptions& options) {
  ScheduledFaults faults(schedule, options.seed);
  cache_service::CacheServer::Options server_options;
  absl::StatusOr<resilience::PolicySet> server_policies = resilience::PolicySet::FromJsonString(
      absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], )",
                   R"("faultInjection": {"delay": ")",
                   absl::StrFormat("%.6fs", absl::ToDoubleSeconds(options.latency)),
                   R"(", "delayFraction": 1}}]})"));
  if (!server_policies.ok()) return server_policies.status();
  server_options.policies = *std::move(server_policies);
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      StartScheduledServer(faults, std::move(server_options), kKey);
  if (!server.ok()) return server.status();

  const absl::Time t0 = absl::Now() + absl::Milliseconds(200);
  std::vector<absl::StatusOr<std::vector<LiveCall>>> results(policies.size(),
                                                             absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < policies.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = RunPolicy((*server)->address(), policies[i], options, t0);
    });
  }
  for (std::thread& t : threads) t.join();
  (*server)->Shutdown(absl::Seconds(1));
  (*server)->Wait();
  std::vector<Metrics> metrics;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (!results[i].ok()) return results[i].status();
    RunRecorder recorder(schedule, options.length, options.seed);
    for (const LiveCall& call : *results[i]) {
      if (call.outcome == 'r') {
        recorder.RejectedLocally(call.tick);
      } else {
        recorder.Reached(call.tick, call.outcome == 's');
      }
    }
    Metrics m = recorder.Finish();
    const ScheduledFaults::Counts server_counts = faults.CountsOf(policies[i].key);
    if (server_counts.served != m.succeeded + m.failed || server_counts.failed != m.failed) {
      return absl::InternalError(absl::StrCat(
          "policy ", policies[i].key, ": the server counted ", server_counts.served, " calls (",
          server_counts.failed, " failed), the client ", m.succeeded + m.failed, " (", m.failed,
          ")"));
    }
    metrics.push_back(std::move(m));
  }
  return metrics;
}

}  // namespace goodput
