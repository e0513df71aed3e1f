#include "src/breaker/outcome.h"

namespace resilience {

absl::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kFailure:
      return "failure";
    case Outcome::kNeutral:
      return "neutral";
  }
  return "unknown";
}

}  // namespace resilience
