// File: src/breaker/outcome.h
//
// The outcome model shared by every breaker and limiter: what one call's
// result means for the health of the backend it went to. The gRPC layer maps
// status codes to outcomes (see docs/accounting.md, "Outcome accounting"); this
// layer only sees the three values.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_OUTCOME_H_
#define GRPC_RESILIENCE_SRC_BREAKER_OUTCOME_H_

#include "absl/strings/string_view.h"

namespace resilience {

enum class Outcome {
  // The backend answered (an application error such as NOT_FOUND included).
  kSuccess,
  // The backend failed, was unreachable, overloaded or too slow.
  kFailure,
  // Says nothing about the backend (the caller cancelled, the caller's own
  // deadline passed): not counted at all.
  kNeutral,
};

absl::string_view OutcomeName(Outcome outcome);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_OUTCOME_H_
