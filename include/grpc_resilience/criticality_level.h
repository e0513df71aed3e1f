/// \file include/grpc_resilience/criticality_level.h
///
/// The four criticality levels of a call, as in Google's SRE book
/// ("Handling Overload"), and their names on the wire. Plain values: the
/// gRPC-free core (server limits, the client's SRE throttle) speaks them, and
/// criticality.h sets and propagates them on gRPC calls (docs/criticality.md).

#ifndef GRPC_RESILIENCE_CRITICALITY_LEVEL_H_
#define GRPC_RESILIENCE_CRITICALITY_LEVEL_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// From the most to the least important. The numeric order is the shedding
/// order: a higher value is shed first.
enum class Criticality {
  kCriticalPlus = 0,   ///< the most critical: shed last
  kCritical = 1,       ///< the default of every method
  kSheddablePlus = 2,  ///< may be retried later; shed before CRITICAL
  kSheddable = 3,      ///< batch, prefetch: shed first
};

/// How many levels there are: the size of an array indexed by
/// CriticalityIndex().
inline constexpr int kCriticalityLevels = 4;

/// The index of `level` in [0, kCriticalityLevels).
constexpr int CriticalityIndex(Criticality level) { return static_cast<int>(level); }

/// CriticalityName()
///
/// The level's name on the wire and in the policy file: "CRITICAL_PLUS",
/// "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE".
GRPC_RESILIENCE_EXPORT absl::string_view CriticalityName(Criticality level);

/// ParseCriticality()
///
/// The level named exactly `name` (one of the four names above, upper case);
/// nullopt for anything else, an empty, long or binary value included (a
/// value longer than the longest name is refused by its length alone).
/// Keeps nothing.
GRPC_RESILIENCE_EXPORT std::optional<Criticality> ParseCriticality(absl::string_view name);

/// LessCritical()
///
/// The less critical of `a` and `b` (the one shed first).
constexpr Criticality LessCritical(Criticality a, Criticality b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_CRITICALITY_LEVEL_H_
