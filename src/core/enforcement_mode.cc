// File: src/core/enforcement_mode.cc
//
// The names of the enforcement modes and of the policies they apply to
// (grpc_resilience/enforcement_mode.h).

#include "grpc_resilience/enforcement_mode.h"

#include <array>

namespace resilience {
namespace {

constexpr std::array<absl::string_view, 3> kModeNames = {"enforce", "shadow", "off"};
constexpr std::array<absl::string_view, 7> kPolicyNames = {
    "breaker", "bulkhead", "throttle", "perCaller", "cpu", "global", "criticalityShares"};

template <typename Enum, size_t N>
std::optional<Enum> Find(const std::array<absl::string_view, N>& names, absl::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

template <size_t N>
absl::string_view NameAt(const std::array<absl::string_view, N>& names, size_t i) {
  return i < N ? names[i] : absl::string_view("unknown");
}

}  // namespace

absl::string_view EnforcementModeName(EnforcementMode mode) {
  return NameAt(kModeNames, static_cast<size_t>(mode));
}

std::optional<EnforcementMode> ParseEnforcementMode(absl::string_view name) {
  return Find<EnforcementMode>(kModeNames, name);
}

absl::string_view EnforcedPolicyName(EnforcedPolicy policy) {
  return NameAt(kPolicyNames, static_cast<size_t>(policy));
}

std::optional<EnforcedPolicy> ParseEnforcedPolicy(absl::string_view name) {
  return Find<EnforcedPolicy>(kPolicyNames, name);
}

}  // namespace resilience
