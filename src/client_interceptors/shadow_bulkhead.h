// File: src/client_interceptors/shadow_bulkhead.h
//
// A call's part of a bulkhead in shadow mode (docs/shadow-mode.md), the
// same for both call objects (RetriedUnaryCall, SingleAttemptCall): its
// decision noted and counted, the call going at once whatever it is.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SHADOW_BULKHEAD_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SHADOW_BULKHEAD_H_

#include "absl/time/time.h"
#include "grpc_resilience/enforcement_mode.h"
#include "src/client_interceptors/call_counters.h"
#include "src/limits/bulkhead.h"

namespace resilience {

// What a call holds of a shadow bulkhead until it ends.
struct ShadowBulkheadHold {
  bool slot = false;    // a slot: Bulkhead::Leave() at the end
  bool queued = false;  // a place in its queue: EndShadowBulkhead() at the end
};

// EnterShadowBulkhead()
//
// The call's entry under `mode` (kShadow: Bulkhead::EnterShadow(), a
// would-be rejection counted in `counters`; kOff: nothing held or counted).
inline ShadowBulkheadHold EnterShadowBulkhead(EnforcementMode mode, Bulkhead& bulkhead,
                                              Bulkhead::Waiter& waiter, absl::Duration time_left,
                                              CallCounters& counters) {
  ShadowBulkheadHold hold;
  if (mode != EnforcementMode::kShadow) return hold;
  switch (bulkhead.EnterShadow(waiter, time_left)) {
    case Bulkhead::Entry::kAdmitted:
      hold.slot = true;
      break;
    case Bulkhead::Entry::kQueued:
      hold.queued = true;
      break;
    case Bulkhead::Entry::kQueueFull:
      counters.ShadowRejectedByBulkhead(ShadowBulkheadReason::kQueueFull);
      break;
    case Bulkhead::Entry::kNoTimeToWait:
      counters.ShadowRejectedByBulkhead(ShadowBulkheadReason::kNoTimeToWait);
      break;
  }
  return hold;
}

// EndShadowBulkhead()
//
// The end of a call that held a place in the queue: a slot handed to it is
// given back (Bulkhead::EndShadow()); a wait that would have ended first is
// counted as a would-be rejection.
inline void EndShadowBulkhead(Bulkhead& bulkhead, Bulkhead::Waiter& waiter,
                              CallCounters& counters) {
  if (bulkhead.EndShadow(waiter) == Bulkhead::ShadowEnd::kExpired) {
    counters.ShadowRejectedByBulkhead(ShadowBulkheadReason::kWaitExpired);
  }
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SHADOW_BULKHEAD_H_
