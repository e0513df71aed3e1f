// File: src/server_interceptors/scope_enforcement.h
//
// The enforcement modes of a throttle scope's policies (the throttle's own
// limits, criticalityShares, cpu, perCaller, global): what the file says,
// switched in place at runtime (ServerResilience::Update() that changes only
// `enforcement`, ServerResilience::SetEnforcement()) while the limits keep
// their state. docs/shadow-mode-server.md.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SCOPE_ENFORCEMENT_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SCOPE_ENFORCEMENT_H_

#include <atomic>
#include <cstdint>

#include "grpc_resilience/enforcement_mode.h"
#include "src/policy/method_policy.h"

namespace resilience {

// The modes one call is judged with (read once, at its admission).
struct EnforcementModes {
  EnforcementMode throttle = EnforcementMode::kEnforce;  // maxConcurrency, adaptive, ratePerSecond
  EnforcementMode shares = EnforcementMode::kEnforce;    // criticalityShares
  EnforcementMode cpu = EnforcementMode::kEnforce;
  EnforcementMode per_caller = EnforcementMode::kEnforce;  // perCaller and perCaller.global
  EnforcementMode global = EnforcementMode::kEnforce;

  // Every mode enforce (the admission path's fast test).
  bool AllEnforced() const;
  // After a shadow policy would have refused the call: the policies still
  // in shadow become off for it (in enforce mode the call would never have
  // reached them), the enforcing ones judge it as usual.
  void AfterShadowRefusal();
};

// ScopeEnforcement
//
// The five modes of a scope, packed in one atomic word: a call reads them
// with one relaxed load (Load()); Set() changes one in place. Thread-safe.
class ScopeEnforcement {
 public:
  ScopeEnforcement() = default;
  ScopeEnforcement(const ScopeEnforcement&) = delete;
  ScopeEnforcement& operator=(const ScopeEnforcement&) = delete;

  EnforcementModes Load() const;
  EnforcementMode Get(EnforcedPolicy policy) const;
  // Sets `policy`'s mode. kBreaker and kBulkhead (client policies) change
  // nothing.
  void Set(EnforcedPolicy policy, EnforcementMode mode);
  // The modes `settings` give each policy (what the policy file says).
  static EnforcementModes Of(const ThrottleSettings& settings);
  void SetAll(const EnforcementModes& modes);

  // The server's policies, in the order the status page lists them.
  static constexpr EnforcedPolicy kPolicies[] = {
      EnforcedPolicy::kThrottle, EnforcedPolicy::kCriticalityShares, EnforcedPolicy::kCpu,
      EnforcedPolicy::kPerCaller, EnforcedPolicy::kGlobal};

 private:
  static uint32_t Pack(const EnforcementModes& modes);
  // Two bits per policy, kEnforce being 0: a new scope enforces everything.
  std::atomic<uint32_t> packed_{0};
};

// The mode of `policy` among `modes` (kEnforce for a client policy).
EnforcementMode ModeOf(const EnforcementModes& modes, EnforcedPolicy policy);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SCOPE_ENFORCEMENT_H_
