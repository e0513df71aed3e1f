#include "examples/cache_service/adaptive_limit_demo.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "examples/common/mutex.h"
#include "grpc_resilience/policy.h"

namespace cache_service {
namespace {

using example_sync::Mutex;
using example_sync::MutexLock;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr int kWorkers = 16;
constexpr absl::Duration kService = absl::Milliseconds(10);
constexpr absl::Duration kDeadline = absl::Milliseconds(100);
constexpr double kOffered = 2400;  // 1.5x the capacity before the drop, 3x after

struct Answer {
  absl::Time sent;
  absl::Duration latency;
  grpc::StatusCode code;
  bool pushback;
};

struct Call {
  grpc::ClientContext context;
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  absl::Time sent;
};

AdaptiveLimitHalf Summarize(const std::vector<Answer>& answers,
                            const std::vector<std::pair<absl::Time, int64_t>>& limits,
                            absl::Time from, absl::Time to, int workers) {
  AdaptiveLimitHalf h;
  h.workers = workers;
  std::vector<absl::Duration> admitted;
  int64_t good = 0, rejected = 0;
  for (const Answer& a : answers) {
    if (a.sent < from || a.sent >= to) continue;
    if (a.code == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++rejected;
      continue;
    }
    admitted.push_back(std::min(a.latency, kDeadline));
    if (a.code == grpc::StatusCode::OK && a.latency <= kDeadline) ++good;
  }
  const double seconds = absl::ToDoubleSeconds(to - from);
  h.goodput = good / seconds;
  h.rejected = rejected / seconds;
  if (!admitted.empty()) {
    std::sort(admitted.begin(), admitted.end());
    h.admitted_p90 = admitted[std::min(admitted.size() - 1, admitted.size() * 90 / 100)];
    h.admitted_p99 = admitted[std::min(admitted.size() - 1, admitted.size() * 99 / 100)];
  }
  double sum = 0;
  int n = 0;
  for (const auto& [at, limit] : limits) {
    if (at >= from && at < to) {
      sum += static_cast<double>(limit);
      ++n;
    }
  }
  h.limit = n == 0 ? 0 : sum / n;
  return h;
}

}  // namespace

absl::StatusOr<AdaptiveLimitRun> RunAdaptiveLimitDemo(absl::Duration half) {
  absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                             "throttle": {"adaptive": {}}}]})");
  if (!policies.ok()) return policies.status();
  BoundedCapacityService service(kWorkers, kWorkers, kService);
  absl::StatusOr<GuardedBackend> backend = ServeGuarded(service, *std::move(policies));
  if (!backend.ok()) return backend.status();
  const std::shared_ptr<resilience::ServerResilience>& resilience = backend->resilience;
  grpc::Server* const server = backend->server.get();
  cache::v1::CacheService::Stub* const stub = backend->stub.get();

  Mutex mu;
  std::vector<Answer> answers;
  std::vector<std::pair<absl::Time, int64_t>> limits;
  std::atomic<int64_t> outstanding{0};
  std::atomic<bool> sampling{true};
  const absl::Time start = absl::Now();
  const absl::Time drop = start + half;
  const absl::Time end = drop + half;
  std::thread sampler([&] {
    while (sampling.load()) {
      const int64_t limit = resilience->Stats(kGet).concurrency_limit;
      {
        MutexLock lock(&mu);
        limits.emplace_back(absl::Now(), limit);
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  });
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  bool dropped = false;
  for (absl::Time next = start;;) {
    next += absl::Seconds(-std::log(1.0 - uniform(random)) / kOffered);
    if (next >= end) break;
    if (const absl::Duration wait = next - absl::Now(); wait > absl::ZeroDuration()) {
      absl::SleepFor(wait);
    }
    if (!dropped && absl::Now() >= drop) {
      service.SetWorkers(kWorkers / 2);
      dropped = true;
    }
    auto* call = new Call;
    call->request.set_key("k");
    call->sent = absl::Now();
    call->context.set_deadline(absl::ToChronoTime(call->sent + kDeadline));
    outstanding.fetch_add(1);
    stub->async()->Get(&call->context, &call->request, &call->response,
                       [call, &mu, &answers, &outstanding](grpc::Status status) {
                         const auto& trailers = call->context.GetServerTrailingMetadata();
                         Answer a{call->sent, absl::Now() - call->sent, status.error_code(),
                                  trailers.find("grpc-retry-pushback-ms") != trailers.end()};
                         {
                           MutexLock lock(&mu);
                           answers.push_back(a);
                         }
                         delete call;
                         outstanding.fetch_sub(1);
                       });
  }
  const absl::Time give_up = absl::Now() + kDeadline + absl::Seconds(5);
  while (outstanding.load() > 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  sampling.store(false);
  sampler.join();
  service.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  while (outstanding.load() > 0) absl::SleepFor(absl::Milliseconds(5));

  MutexLock lock(&mu);
  AdaptiveLimitRun run;
  run.service_time = kService;
  run.deadline = kDeadline;
  run.offered = kOffered;
  // The last second of each half: the limit had a second to follow.
  const absl::Duration window = std::min(half, absl::Seconds(1));
  run.before = Summarize(answers, limits, drop - window, drop, kWorkers);
  run.after = Summarize(answers, limits, end - window, end, kWorkers / 2);
  for (const Answer& a : answers) {
    if (a.code == grpc::StatusCode::RESOURCE_EXHAUSTED && !a.pushback) {
      ++run.rejections_without_pushback;
    }
  }
  return run;
}

}  // namespace cache_service
