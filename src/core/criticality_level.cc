// File: src/core/criticality_level.cc
//
// The names of the criticality levels (grpc_resilience/criticality_level.h).

#include "grpc_resilience/criticality_level.h"

namespace resilience {
namespace {

constexpr absl::string_view kNames[kCriticalityLevels] = {"CRITICAL_PLUS", "CRITICAL",
                                                          "SHEDDABLE_PLUS", "SHEDDABLE"};
// The longest name: anything longer is not a level.
constexpr size_t kLongestName = 14;

}  // namespace

absl::string_view CriticalityName(Criticality level) {
  const int i = CriticalityIndex(level);
  return i >= 0 && i < kCriticalityLevels ? kNames[i] : absl::string_view("UNKNOWN");
}

std::optional<Criticality> ParseCriticality(absl::string_view name) {
  if (name.empty() || name.size() > kLongestName) return std::nullopt;
  for (int i = 0; i < kCriticalityLevels; ++i) {
    if (name == kNames[i]) return static_cast<Criticality>(i);
  }
  return std::nullopt;
}

}  // namespace resilience
