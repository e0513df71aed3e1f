#include "src/server_interceptors/server_resilience.h"

namespace resilience {

ServerResilience::ServerResilience(PolicySet policies, Clock& clock)
    : policies_(std::move(policies)), clock_(clock) {}

ScopeLimits* ServerResilience::LimitsFor(absl::string_view scope,
                                         const ThrottleSettings& settings) {
  std::unique_ptr<ScopeLimits>& limits = scopes_[scope];
  if (limits == nullptr) {
    limits = std::make_unique<ScopeLimits>();
    limits->scope = std::string(scope);
    if (settings.max_concurrency > 0) {
      limits->concurrency = std::make_unique<FixedConcurrencyLimiter>(settings.max_concurrency);
    }
    if (settings.rate_per_second > 0) {
      // The policy loader validated rate and burst.
      limits->rate = *TokenBucket::Create(settings.rate_per_second, settings.burst, clock_);
    }
  }
  return limits.get();
}

ServerMethodState* ServerResilience::ForMethod(absl::string_view method) {
  MutexLock lock(&mu_);
  auto it = methods_.find(method);
  if (it != methods_.end()) return it->second.get();
  std::unique_ptr<ServerMethodState> state;
  const PolicySet::Match match = policies_.Find(method);
  if (match.policy != nullptr && (match.policy->throttle || match.policy->fault_injection)) {
    state = std::make_unique<ServerMethodState>();
    state->method = std::string(method);
    if (match.policy->throttle) state->limits = LimitsFor(match.scope, *match.policy->throttle);
    if (match.policy->fault_injection) {
      state->fault = &*match.policy->fault_injection;
      state->fault_random = std::make_unique<SplitMixRandom>(state->fault->seed);
    }
  }
  ServerMethodState* result = state.get();
  methods_.emplace(method, std::move(state));  // null too: resolved once
  return result;
}

ServerMethodStats ServerResilience::Stats(absl::string_view method) {
  MutexLock lock(&mu_);
  ServerMethodStats stats;
  auto it = methods_.find(method);
  if (it == methods_.end() || it->second == nullptr) return stats;
  const ServerMethodState& s = *it->second;
  stats.admitted = s.admitted.load();
  stats.rejected_concurrency = s.rejected_concurrency.load();
  stats.rejected_rate = s.rejected_rate.load();
  stats.in_flight = s.in_flight.load();
  stats.faults_aborted = s.faults_aborted.load();
  stats.faults_delayed = s.faults_delayed.load();
  stats.expired_while_delayed = s.expired_while_delayed.load();
  return stats;
}

}  // namespace resilience
