// File: src/policy/outcome_classifier.h
//
// What a call's final status code means for the breaker (docs/accounting.md,
// "Outcome accounting"), overridable per method.

#ifndef GRPC_RESILIENCE_SRC_POLICY_OUTCOME_CLASSIFIER_H_
#define GRPC_RESILIENCE_SRC_POLICY_OUTCOME_CLASSIFIER_H_

#include <array>

#include "absl/status/status.h"
#include "src/breaker/outcome.h"
#include "src/policy/status_codes.h"

namespace resilience {

// OutcomeClassifier
//
// The default table:
//   OK                                                      success
//   INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
//   PERMISSION_DENIED, UNAUTHENTICATED, FAILED_PRECONDITION,
//   OUT_OF_RANGE, UNIMPLEMENTED                              success (the backend answered)
//   UNAVAILABLE, INTERNAL, UNKNOWN, DATA_LOSS,
//   RESOURCE_EXHAUSTED, ABORTED, DEADLINE_EXCEEDED           failure
//   CANCELLED                                               neutral
// DEADLINE_EXCEEDED stands for a sent call that a deadline ended (a
// per-attempt timeout, or the call's own deadline unless the breaker's
// callerDeadline is NEUTRAL); the interceptor classifies the caller's own
// cancellation as neutral before asking (docs/client-semantics.md). A value
// type; const methods are thread-safe.
class OutcomeClassifier {
 public:
  OutcomeClassifier();

  // Classify()
  //
  // The outcome of an attempt that ended with `code`.
  Outcome Classify(absl::StatusCode code) const {
    const int i = static_cast<int>(code);
    return i >= 0 && i < kNumStatusCodes ? table_[i] : Outcome::kFailure;
  }

  // Set()
  //
  // Overrides the outcome of one code.
  void Set(absl::StatusCode code, Outcome outcome) { table_[static_cast<int>(code)] = outcome; }

 private:
  std::array<Outcome, kNumStatusCodes> table_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_OUTCOME_CLASSIFIER_H_
