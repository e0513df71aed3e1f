#include "experiments/goodput/grpc_run.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/stale_reads.h"
#include "experiments/goodput/run_recorder.h"
#include "experiments/goodput/schedule_fault_interceptor.h"
#include "experiments/goodput/scheduled_faults.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "src/core/simulated_clock.h"
#include "grpc_resilience/fallback.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/grpc_common/status_conversion.h"

namespace goodput {
namespace {

constexpr char kKey[] = "goodput";

// Generous: a call over loopback takes well under a millisecond; this only
// bounds a hang.
constexpr absl::Duration kCallDeadline = absl::Seconds(30);

// One policy's run: its own clock, channel and breaker.
absl::StatusOr<Metrics> RunPolicy(const std::string& target, const std::vector<Period>& schedule,
                                  absl::Duration length, const Policy& policy, uint64_t seed,
                                  ScheduledFaults& faults) {
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileFor(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.key, ": ", policies.status().message()));
  }
  resilience::SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  // The library's channel: the chain for the policy, and gRPC's own retry
  // configured for it (it retries streams only; the experiment's calls are
  // unary Gets, which only the chain retries).
  resilience::ResilientChannelOptions options;
  options.resilience.seed = seed;
  options.resilience.name = policy.key;
  const resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      target, grpc::InsecureChannelCredentials(), *policies, std::move(options), clock);
  if (!channel.warnings.empty()) {
    return absl::InternalError(absl::StrCat("policy ", policy.key, ": channel: ",
                                            absl::StrJoin(channel.warnings, "; ")));
  }
  std::unique_ptr<cache::v1::CacheService::Stub> stub =
      cache::v1::CacheService::NewStub(channel.channel);

  // Get's fallback: the last value a call read, answered to every call
  // that fails or is refused once one was read (fallback.h).
  cache_service::StaleReads copy(1);
  resilience::FallbackOptions fallback;
  fallback.codes = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::RESOURCE_EXHAUSTED};
  if (absl::Status s = copy.Install(*channel.resilience, fallback); !s.ok()) return s;
  int64_t answered_stale = 0;

  RunRecorder recorder(schedule, length, seed);
  cache::v1::GetReq request;
  request.set_key(kKey);
  const int64_t calls = absl::ToInt64Milliseconds(length);
  for (int64_t tick = 0; tick < calls; ++tick) {
    clock.SetTime(t0 + absl::Milliseconds(tick));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
    context.AddMetadata(kRunMetadataKey, policy.key);
    context.AddMetadata(kTickMetadataKey, std::to_string(tick));
    cache::v1::GetResp response;
    const grpc::Status status = stub->Get(&context, request, &response);
    // A stale answer is the call's failure for the breaker's measures.
    const bool stale = resilience::FellBack(context);
    if (stale && status.ok()) ++answered_stale;
    if (status.ok() && !stale) {
      recorder.Reached(tick, true);
      copy.Remember(kKey, response.value());
    } else if (resilience::RejectedLocally(context)) {
      recorder.RejectedLocally(tick);
    } else if (stale || status.error_code() == grpc::StatusCode::UNAVAILABLE ||
               status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      recorder.Reached(tick, false);
    } else {
      return absl::InternalError(absl::StrCat("policy ", policy.key, ", call at tick ", tick,
                                              ": unexpected ",
                                              resilience::StatusCodeName(status.error_code()),
                                              ": ", status.error_message()));
    }
  }
  Metrics m = recorder.Finish();
  m.answered_stale = answered_stale;
  // What the server saw must match what the client counted.
  const ScheduledFaults::Counts server = faults.CountsOf(policy.key);
  if (server.served != m.succeeded + m.failed ||
      server.served_failing != m.reached_failing_backend || server.failed != m.failed) {
    return absl::InternalError(absl::StrCat(
        "policy ", policy.key, ": the server counted ", server.served, " calls (",
        server.served_failing, " while failing, ", server.failed, " failed), the client ",
        m.succeeded + m.failed, " (", m.reached_failing_backend, ", ", m.failed, ")"));
  }
  return m;
}

}  // namespace

absl::StatusOr<std::vector<Metrics>> RunOverGrpc(const std::vector<Period>& schedule,
                                                 absl::Duration length,
                                                 const std::vector<Policy>& policies,
                                                 uint64_t seed) {
  ScheduledFaults faults(schedule, seed);
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      StartScheduledServer(faults, cache_service::CacheServer::Options(), kKey);
  if (!server.ok()) return server.status();

  std::vector<absl::StatusOr<Metrics>> results(policies.size(), absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < policies.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = RunPolicy((*server)->address(), schedule, length, policies[i], seed, faults);
    });
  }
  for (std::thread& t : threads) t.join();
  (*server)->Shutdown(absl::Seconds(1));
  (*server)->Wait();
  std::vector<Metrics> metrics;
  for (absl::StatusOr<Metrics>& r : results) {
    if (!r.ok()) return r.status();
    metrics.push_back(*std::move(r));
  }
  return metrics;
}

}  // namespace goodput
