// File: src/breaker/enforced_admission.h
//
// EnforcedAdmission(): what a breaker's decision becomes under its
// enforcement mode (grpc_resilience/enforcement_mode.h, docs/shadow-mode.md).

#ifndef GRPC_RESILIENCE_SRC_BREAKER_ENFORCED_ADMISSION_H_
#define GRPC_RESILIENCE_SRC_BREAKER_ENFORCED_ADMISSION_H_

#include <utility>

#include "grpc_resilience/enforcement_mode.h"
#include "src/breaker/breaker.h"

namespace resilience {

// EnforcedAdmission()
//
// `decided`, the breaker's own answer (Allow() and its kin), under `mode`:
//   kEnforce: `decided` as it is.
//   kShadow: an admission stays one; a rejection becomes an admission that
//     records nothing (Admission(): admitted, not pending, not waived; the
//     call goes out) and `*would_reject` gets its reason. Nothing is
//     recorded on any breaker for that call (the method's nor an endpoint's), exactly
//     as nothing reaches an enforcing breaker from a call it rejected: fed
//     the same outcomes of the calls it admits, a shadow breaker goes through
//     the same states (opens, half-opens, spends its probes) as an enforcing
//     one, and its rejected count is the enforcing one's rejections.
//   kOff: never asked (the caller does not call the breaker at all).
// `*would_reject` stays as it was unless the call would have been rejected.
inline Admission EnforcedAdmission(Admission decided, EnforcementMode mode,
                                   RejectReason* would_reject) {
  if (decided.admitted() || mode != EnforcementMode::kShadow) return decided;
  *would_reject = decided.reason();
  return Admission();
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_ENFORCED_ADMISSION_H_
