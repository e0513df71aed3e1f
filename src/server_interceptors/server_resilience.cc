#include "grpc_resilience/internal/server_interceptors/server_resilience.h"

#include "grpc_resilience/internal/policy/method_catalog.h"

namespace resilience {

namespace {

bool AnyPolicy(const PolicySet& policies, bool (*has)(const MethodPolicy&)) {
  for (const MethodPolicy& p : policies.policies()) {
    if (has(p)) return true;
  }
  return false;
}

}  // namespace

ServerResilience::ServerResilience(PolicySet policies, Clock& clock,
                                   std::shared_ptr<ResilienceEvents> events)
    : policies_(std::move(policies)),
      clock_(clock),
      events_(std::move(events)),
      any_throttle_(AnyPolicy(policies_, [](const MethodPolicy& p) { return p.throttle.has_value(); })),
      any_fault_injection_(AnyPolicy(
          policies_, [](const MethodPolicy& p) { return p.fault_injection.has_value(); })) {}

ScopeLimits* ServerResilience::LimitsFor(absl::string_view scope,
                                         const ThrottleSettings& settings) {
  std::unique_ptr<ScopeLimits>& limits = scopes_[scope];
  if (limits == nullptr) {
    limits = std::make_unique<ScopeLimits>();
    limits->scope = std::string(scope);
    limits->min_pushback = settings.min_pushback;
    limits->max_pushback = settings.max_pushback;
    if (settings.max_concurrency > 0) {
      limits->concurrency = std::make_unique<FixedConcurrencyLimiter>(settings.max_concurrency);
    }
    if (settings.rate_per_second > 0) {
      // The policy loader checks rate and burst with the bucket's own rules,
      // so this cannot fail for a loaded policy; if it did, the scope would
      // admit nothing and say why rather than crash or admit everything.
      absl::StatusOr<std::unique_ptr<TokenBucket>> bucket =
          TokenBucket::Create(settings.rate_per_second, settings.burst, clock_);
      if (bucket.ok()) {
        limits->rate = *std::move(bucket);
      } else {
        limits->unusable = std::string(bucket.status().message());
      }
    }
  }
  return limits.get();
}

ServerMethodState* ServerResilience::ForMethod(const char* method) {
  return methods_.Find(method, [this](const char* name) { return Resolve(name); });
}

MethodCache<ServerMethodState>::Resolution ServerResilience::Resolve(const char* method) {
  const PolicySet::Match match = policies_.Find(method);
  // A method the file names exactly, or one linked into the process, is
  // known to the program; other names come from clients and are bounded.
  const bool named = (!match.scope.empty() && match.scope.back() != '/') ||
                     MethodCatalog::Linked().Find(method) != nullptr;
  if (match.policy == nullptr || (!match.policy->throttle && !match.policy->fault_injection)) {
    return {nullptr, named};
  }
  auto state = std::make_unique<ServerMethodState>();
  state->method = method;
  state->events = events_.get();
  if (match.policy->fault_injection) {
    state->fault = &*match.policy->fault_injection;
    state->fault_random = std::make_unique<SplitMixRandom>(state->fault->seed);
  }
  MutexLock lock(&mu_);
  state->guarded = guarded_methods_.contains(state->method);
  if (match.policy->throttle) state->limits = LimitsFor(match.scope, *match.policy->throttle);
  return {std::move(state), named};
}

absl::Status ServerResilience::RegisterGuardedService(grpc::ServerBuilder& builder,
                                                      grpc::Service* service,
                                                      absl::string_view full_name) {
  absl::StatusOr<std::unique_ptr<GuardedService>> guard =
      GuardedService::Create(service, full_name, &call_verdicts_);
  if (!guard.ok()) return guard.status();
  builder.RegisterService(guard->get());
  MutexLock lock(&mu_);
  for (const std::string& method : (*guard)->methods()) guarded_methods_.insert(method);
  guards_.push_back(*std::move(guard));
  return absl::OkStatus();
}

ServerMethodStats ServerResilience::Stats(absl::string_view method) {
  ServerMethodStats stats;
  const ServerMethodState* state = methods_.Get(std::string(method));
  if (state == nullptr) return stats;
  const ServerMethodState& s = *state;
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
