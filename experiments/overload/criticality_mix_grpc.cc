#include "experiments/overload/criticality_mix_grpc.h"

#include <atomic>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "grpc_resilience/criticality.h"
#include "grpc_resilience/policy.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

struct MixCall {
  grpc::ClientContext context;
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  absl::Time sent;
  bool critical = false;
};

absl::StatusOr<MixRun> RunOne(const MixConfig& c, const Policy& policy, bool honour,
                              int64_t* unsent) {
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileJson(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.name, ": ", policies.status().message()));
  }
  cache_service::BoundedCapacityService service(c.workers, c.workers, c.service_time, c.seed);
  absl::StatusOr<cache_service::GuardedBackend> backend =
      cache_service::ServeGuarded(service, *std::move(policies));
  if (!backend.ok()) return backend.status();
  cache::v1::CacheService::Stub* const stub = backend->stub.get();
  {  // one call first, so that no measured call waits for the connection
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    cache::v1::GetReq request;
    cache::v1::GetResp response;
    request.set_key("warm-up");
    stub->Get(&context, request, &response);
  }
  Mutex mu;
  MixRun run;
  run.policy = policy.name;
  run.honoured = honour;
  std::atomic<int64_t> outstanding{0};
  resilience::SplitMixRandom arrivals(c.seed);
  resilience::SplitMixRandom classes(c.seed ^ 0x5851f42d4c957f2dULL);
  const double rate = c.load * c.workers / absl::ToDoubleSeconds(c.service_time);
  const absl::Time start = absl::Now() + absl::Milliseconds(50);
  const absl::Time end = start + c.duration;
  absl::Time next = start;
  while (true) {
    next += absl::Seconds(-std::log(1.0 - arrivals.NextUniform()) / rate);
    if (next >= end) break;
    const bool critical = classes.NextUniform() < c.critical_fraction;
    if (const absl::Duration wait = next - absl::Now(); wait > absl::ZeroDuration()) {
      absl::SleepFor(wait);
    }
    // Reached more than a deadline late: the process stalled; not sent.
    if (absl::Now() - next > c.deadline) {
      ++*unsent;
      continue;
    }
    auto* call = new MixCall;
    call->critical = critical;
    call->request.set_key("k");
    if (honour && !critical) {
      resilience::SetCriticality(call->context, resilience::Criticality::kSheddable);
    }
    call->sent = absl::Now();
    call->context.set_deadline(absl::ToChronoTime(call->sent + c.deadline));
    {
      MutexLock lock(&mu);
      ++(critical ? run.critical : run.sheddable).offered;
    }
    outstanding.fetch_add(1);
    stub->async()->Get(&call->context, &call->request, &call->response,
                       [call, &mu, &run, &outstanding, &c](grpc::Status status) {
                         const absl::Duration latency = absl::Now() - call->sent;
                         {
                           MutexLock lock(&mu);
                           ClassResult& r = call->critical ? run.critical : run.sheddable;
                           if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
                             ++r.rejected;
                           } else if (status.ok() && latency <= c.deadline) {
                             ++r.ok_in_deadline;
                           } else {
                             ++r.late;
                           }
                         }
                         delete call;
                         outstanding.fetch_sub(1);
                       });
  }
  const absl::Time give_up = absl::Now() + c.deadline + absl::Seconds(5);
  while (outstanding.load() > 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  backend->server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  MutexLock lock(&mu);
  run.goodput_per_second = (run.critical.ok_in_deadline + run.sheddable.ok_in_deadline) /
                           absl::ToDoubleSeconds(c.duration);
  return run;
}

}  // namespace

MixConfig MixGrpcDefaults() {
  MixConfig c;
  c.workers = 8;
  c.service_time = absl::Milliseconds(20);
  c.deadline = absl::Milliseconds(60);
  c.duration = absl::Seconds(5);
  return c;
}

absl::StatusOr<MixResult> RunMixGrpc(const MixConfig& config,
                                     const std::vector<Policy>& policies) {
  MixResult result;
  result.config = config;
  for (const Policy& policy : policies) {
    for (const bool honour : {true, false}) {
      int64_t unsent = 0;
      absl::StatusOr<MixRun> run = RunOne(config, policy, honour, &unsent);
      if (!run.ok()) return run.status();
      if (unsent > 0) {
        result.notes.push_back(absl::StrCat(policy.name, honour ? " honoured" : " ignored", ": ",
                                            unsent, " arrivals not sent (the process stalled)"));
      }
      result.runs.push_back(*std::move(run));
    }
  }
  return result;
}

}  // namespace overload
