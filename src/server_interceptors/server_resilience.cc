#include "src/server_interceptors/server_resilience.h"

namespace resilience {

namespace {

bool AnyPolicy(const PolicySet& policies, bool (*has)(const MethodPolicy&)) {
  for (const MethodPolicy& p : policies.policies()) {
    if (has(p)) return true;
  }
  return false;
}

}  // namespace

ServerResilience::ServerResilience(PolicySet policies, Clock& clock)
    : policies_(std::move(policies)),
      clock_(clock),
      any_throttle_(AnyPolicy(policies_, [](const MethodPolicy& p) { return p.throttle.has_value(); })),
      any_fault_injection_(AnyPolicy(
          policies_, [](const MethodPolicy& p) { return p.fault_injection.has_value(); })) {}

ServerMethodState* ServerResilience::ForMethod(const char* method) {
  const size_t slot = (reinterpret_cast<uintptr_t>(method) >> 3) % kCacheSlots;
  const CacheEntry* entry = cache_[slot].load(std::memory_order_acquire);
  if (entry != nullptr && entry->key == method && entry->name == method) return entry->state;
  ServerMethodState* state = Resolve(method);
  if (entry == nullptr) {
    // First come keeps the slot: at most kCacheSlots entries ever, and a
    // method that collides with another simply stays on the locked path.
    MutexLock lock(&mu_);
    if (cache_[slot].load(std::memory_order_relaxed) == nullptr) {
      cache_entries_.push_back(std::make_unique<CacheEntry>(CacheEntry{method, method, state}));
      cache_[slot].store(cache_entries_.back().get(), std::memory_order_release);
    }
  }
  return state;
}

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

ServerMethodState* ServerResilience::Resolve(const char* method) {
  MutexLock lock(&mu_);
  auto it = methods_.find(method);
  if (it != methods_.end()) return it->second.get();
  // Clients choose method names (unimplemented ones reach the interceptors
  // too), so the map is bounded: past kMaxMethods distinct names, new ones
  // are not throttled or faulted. Registered methods are normally resolved
  // long before.
  if (methods_.size() >= kMaxMethods) return nullptr;
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
