#include "grpc_resilience/internal/client_interceptors/client_resilience.h"

#include "grpc_resilience/internal/policy/method_catalog.h"


namespace resilience {

ClientResilience::ClientResilience(PolicySet policies, Options options)
    : policies_(std::move(policies)), options_(std::move(options)) {}

MethodCache<ClientMethodState>::Resolution ClientResilience::Resolve(const char* method) {
  const PolicySet::Match match = policies_.Find(method);
  const bool linked = MethodCatalog::Linked().Find(method) != nullptr;
  // An exact name of the policy file ("svc/method", not "svc/" or "").
  const bool named = !match.scope.empty() && match.scope.back() != '/';
  if (match.policy == nullptr) return {nullptr, linked};
  const MethodPolicy& policy = *match.policy;
  auto state = std::make_unique<ClientMethodState>();
  state->method = method;
  state->policy = &policy;
  // Only calls that may be retried pay for re-issuing; a unary call's
  // timeout alone is enforced by the timeout interceptor.
  state->wraps_unary = policy.retry.has_value() && policy.retry->max_attempts > 1;
  state->protobuf_method = linked;
  if (policy.retry) {
    state->retry = *policy.retry;
  } else {
    state->retry.max_attempts = 1;
  }
  // Different methods draw different sequences from one seed.
  state->random = std::make_unique<SplitMixRandom>(options_.seed ^ std::hash<std::string>()(method));
  state->backoff = std::make_unique<Backoff>(
      Backoff::Options{state->retry.initial_backoff, state->retry.max_backoff,
                       state->retry.backoff_multiplier, state->retry.jitter,
                       state->retry.full_jitter},
      *state->random);
  state->budget = std::make_unique<RetryBudget>(policies_.retry_budget().max_tokens,
                                                policies_.retry_budget().token_ratio);
  BreakerSettings breaker = policy.breaker;
  if (options_.events != nullptr && breaker.kind != BreakerKind::kNone) {
    // The breaker calls this outside its locks; the state outlives its
    // breaker.
    ClientMethodState* const raw = state.get();
    BreakerListener listener = [this, raw](const BreakerTransition& transition) {
      options_.events->OnBreakerTransition(
          BreakerEvent{options_.name, raw->method, transition, raw->breaker->Snapshot()});
    };
    breaker.sre.listener = listener;
    breaker.three_state.listener = std::move(listener);
  }
  state->breaker = CreateBreaker(breaker, *options_.clock, options_.seed);
  return {std::move(state), linked || named};
}

ClientMethodState* ClientResilience::ForMethod(const char* method) {
  return methods_.Find(method, [this](const char* name) { return Resolve(name); });
}

ClientMethodStats ClientResilience::Stats(absl::string_view method) {
  ClientMethodStats stats;
  const ClientMethodState* s = methods_.Get(method);
  if (s == nullptr) return stats;
  stats.calls = s->calls.load();
  stats.attempts = s->attempts.load();
  stats.retries = s->retries.load();
  stats.rejected_by_breaker = s->rejected_by_breaker.load();
  stats.attempt_timeouts = s->attempt_timeouts.load();
  stats.retry_budget_exhausted = s->retry_budget_exhausted.load();
  stats.pushback_stops = s->pushback_stops.load();
  stats.not_retried_stub_calls = s->not_retried_stub_calls.load();
  return stats;
}

std::optional<BreakerSnapshot> ClientResilience::BreakerSnapshotOf(absl::string_view method) {
  ClientMethodState* s = methods_.Get(method);
  if (s == nullptr || s->breaker == nullptr) return std::nullopt;
  return s->breaker->Snapshot();
}

}  // namespace resilience
