// The throttle's entry points for each call (throttle_interceptor.h):
// DecideOnArrival(), RejectedOnArrival() and MakeThrottleInterceptor(), and
// what the first of them hands to the others on the call's thread.

#include <memory>
#include <utility>

#include "src/server_interceptors/server_metrics_interceptor.h"
#include "src/server_interceptors/throttle_interceptor.h"

namespace resilience {
namespace {

// What DecideOnArrival() decided for the call being set up on this thread,
// for the factories gRPC calls next for the same call (RejectedOnArrival(),
// MakeThrottleInterceptor()). Replaced by the first factory of each call.
struct Arrival {
  const ServerResilienceImpl* owner = nullptr;
  const grpc::experimental::ServerRpcInfo* info = nullptr;
  bool rejected = false;
  // Admitted on arrival: the call's interceptor, for the throttle's factory.
  std::unique_ptr<ThrottleInterceptor> admitted;
};
thread_local Arrival arrival;

}  // namespace

bool DecideOnArrival(ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info,
                     bool draining) {
  arrival = Arrival{};
  CallVerdicts::ArrivedUndecided();
  if (draining || !resilience.decide_on_arrival() || !resilience.any_throttle()) return false;
  grpc::ServerContextBase* context = info->server_context();
  // The callback API only: its guard runs for every call once the factories
  // are done (nothing else would take the verdict), and its context holds
  // the core call already (the peer, for a per-caller key).
  if (dynamic_cast<grpc::CallbackServerContext*>(context) == nullptr ||
      context->c_call() == nullptr) {
    return false;
  }
  // Kept for the other factories of ours: one generation for the call.
  std::shared_ptr<ServerMethodState> state = resilience.ForCall(info, /*keep_for_next=*/true);
  // Otherwise decided by the interceptor's hooks, as on the sync API.
  if (state == nullptr || state->limits == nullptr || !state->guarded) return false;
  auto throttle = std::make_unique<ThrottleInterceptor>(info, std::move(state), resilience.clock(),
                                                        resilience.call_verdicts());
  arrival.owner = &resilience;
  arrival.info = info;
  arrival.rejected = throttle->DecideOnArrival();
  if (!arrival.rejected) arrival.admitted = std::move(throttle);
  return arrival.rejected;
}

bool RejectedOnArrival(const ServerResilienceImpl& resilience,
                       const grpc::experimental::ServerRpcInfo* info) {
  return arrival.rejected && arrival.owner == &resilience && arrival.info == info;
}

grpc::experimental::Interceptor* MakeThrottleInterceptor(ServerResilienceImpl& resilience,
                                                         grpc::experimental::ServerRpcInfo* info) {
  if (arrival.owner == &resilience && arrival.info == info) {
    // Decided on arrival: rejected (no interceptor), or admitted.
    resilience.ForgetKeptLookup();
    Arrival decided = std::move(arrival);
    arrival = Arrival{};
    return decided.admitted.release();
  }
  if (!resilience.any_throttle() && !resilience.metrics()) {
    resilience.ForgetKeptLookup();
    return nullptr;
  }
  // What the fault injection factory found for this call, if it looked.
  std::shared_ptr<ServerMethodState> state = resilience.ForCall(info, /*keep_for_next=*/false);
  if (state == nullptr) return nullptr;
  if (state->limits != nullptr) {
    return new ThrottleInterceptor(info, state, resilience.clock(), resilience.call_verdicts());
  }
  // Neither throttle nor fault injection: only counted.
  if (state->metrics && state->fault == nullptr) return new ServerMetricsInterceptor(state);
  return nullptr;
}

}  // namespace resilience
