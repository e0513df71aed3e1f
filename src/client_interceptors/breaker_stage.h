// File: src/client_interceptors/breaker_stage.h
//
// The breaker stage of a call's execution: asks the method's circuit
// breaker before an attempt goes out and tells it how the attempt ended.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/local_status.h"

namespace resilience {

// BreakerStage
//
// One per call (a retried call's attempts share it). Without a breaker on
// the method every attempt is admitted and nothing is recorded. The
// breaker may change state inside Admit() and Record(): its listener only
// queues the transition (BreakerEventQueue), so these may be called under
// the call's own lock; the call delivers the events after releasing it.
class BreakerStage {
 public:
  explicit BreakerStage(const ClientMethodState& state)
      : breaker_(state.breaker.get()), settings_(state.policy) {}

  bool enabled() const { return breaker_ != nullptr; }

  // An admission for the next attempt (admitted when there is no breaker).
  Admission Admit() { return breaker_ != nullptr ? breaker_->Allow() : Admission(); }

  // UNAVAILABLE "<method>: rejected locally by the circuit breaker ...".
  grpc::Status Rejection(absl::string_view method, const Admission& admission) const {
    return BreakerRejectionStatus(method, breaker_->kind(), admission.reason());
  }

  // Records an admitted attempt's end: `code` as the policy's breaker
  // settings classify it with `local`, and its latency.
  void Record(Admission& admission, grpc::StatusCode code, LocalEnd local, absl::Time ended) {
    if (!admission.pending()) return;
    admission.Record(settings_->breaker.Classify(static_cast<absl::StatusCode>(code), local),
                     ended - admission.start());
  }

 private:
  Breaker* const breaker_;
  const MethodPolicy* const settings_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_
