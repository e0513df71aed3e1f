#include "src/policy/outcome_classifier.h"

namespace resilience {

OutcomeClassifier::OutcomeClassifier() {
  using C = absl::StatusCode;
  table_.fill(Outcome::kSuccess);  // the backend answered
  for (C code : {C::kUnavailable, C::kInternal, C::kUnknown, C::kDataLoss,
                 C::kResourceExhausted, C::kAborted, C::kDeadlineExceeded}) {
    Set(code, Outcome::kFailure);
  }
  Set(C::kCancelled, Outcome::kNeutral);
}

}  // namespace resilience
