#include "src/metrics/metric_catalog.h"

#include <cstddef>

namespace resilience {
namespace {

using T = MetricType;

// Label values that are fixed.
constexpr absl::string_view kRefusedReasons[] = {"budget", "pushback"};
constexpr absl::string_view kLocalRejectionCauses[] = {"breaker", "bulkhead"};
// FallbackCauseName()'s values, in FallbackCause's order.
constexpr absl::string_view kFallbackCauses[] = {"breaker", "bulkhead", "retry_budget", "failed"};
constexpr absl::string_view kShadowPolicies[] = {"breaker", "bulkhead"};
constexpr absl::string_view kShadowReasons[] = {
    "open",          "half_open_probe_limit", "half_open_probe_interval", "awaiting_connection",
    "forced_open",   "dropped",               "queue_full",               "no_time_to_wait",
    "wait_expired"};
constexpr absl::string_view kBreakerStates[] = {"closed", "open", "half-open"};
constexpr absl::string_view kProbedBreakers[] = {"method", "endpoint"};
constexpr absl::string_view kProbeOutcomes[] = {"serving", "not_serving", "unreachable",
                                                "unknown"};
constexpr absl::string_view kServerRejectionCauses[] = {"concurrency", "rate",     "cpu", "retry",
                                                          "deadline",    "injected_abort"};
constexpr absl::string_view kServerShadowPolicies[] = {"throttle", "criticalityShares", "cpu",
                                                         "perCaller", "global"};
constexpr absl::string_view kCriticalityNames[] = {"CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS",
                                                   "SHEDDABLE"};
constexpr absl::string_view kPerCallerCauses[] = {"concurrency", "rate", "global_rate"};
constexpr absl::string_view kTokenSources[] = {"lease", "local_share"};
constexpr absl::string_view kGlobalLimitTargets[] = {"local_share", "global"};
constexpr absl::string_view kRepairKinds[] = {"key_lost", "bad_value", "clock_back"};

// Label lists. A client's samples carry the method and the channel's name,
// a server's the method, a global limit's the Redis key.
constexpr MetricLabelSpec kClient[] = {{"grpc_method", {}}, {"channel", {}}};
constexpr MetricLabelSpec kClientByCode[] = {
    {"grpc_method", {}}, {"channel", {}}, {"grpc_code", {}}};
constexpr MetricLabelSpec kClientByReason[] = {
    {"grpc_method", {}}, {"channel", {}}, {"reason", kRefusedReasons}};
constexpr MetricLabelSpec kClientByCause[] = {
    {"grpc_method", {}}, {"channel", {}}, {"cause", kLocalRejectionCauses}};
constexpr MetricLabelSpec kClientByFallbackCause[] = {
    {"grpc_method", {}}, {"channel", {}}, {"cause", kFallbackCauses}};
constexpr MetricLabelSpec kClientByShadowReason[] = {
    {"grpc_method", {}}, {"channel", {}}, {"policy", kShadowPolicies}, {"reason", kShadowReasons}};
constexpr MetricLabelSpec kClientByState[] = {
    {"grpc_method", {}}, {"channel", {}}, {"state", kBreakerStates}};
constexpr MetricLabelSpec kClientByEndpointState[] = {
    {"grpc_method", {}}, {"channel", {}}, {"endpoint", {}}, {"state", kBreakerStates}};
constexpr MetricLabelSpec kClientByTransition[] = {
    {"grpc_method", {}}, {"channel", {}}, {"from", kBreakerStates}, {"to", kBreakerStates}};
constexpr MetricLabelSpec kClientByProbe[] = {{"grpc_method", {}},
                                              {"channel", {}},
                                              {"breaker", kProbedBreakers},
                                              {"outcome", kProbeOutcomes}};
constexpr MetricLabelSpec kChannel[] = {{"channel", {}}};
constexpr MetricLabelSpec kServer[] = {{"grpc_method", {}}};
constexpr MetricLabelSpec kServerByCode[] = {{"grpc_method", {}}, {"grpc_code", {}}};
constexpr MetricLabelSpec kServerByCause[] = {{"grpc_method", {}},
                                              {"cause", kServerRejectionCauses}};
constexpr MetricLabelSpec kServerByCriticality[] = {{"grpc_method", {}},
                                                    {"criticality", kCriticalityNames}};
constexpr MetricLabelSpec kServerByShadowPolicy[] = {{"grpc_method", {}},
                                                     {"policy", kServerShadowPolicies}};
constexpr MetricLabelSpec kScope[] = {{"scope", {}}};
constexpr MetricLabelSpec kScopeByCause[] = {{"scope", {}}, {"cause", kPerCallerCauses}};
constexpr MetricLabelSpec kKey[] = {{"key", {}}};
constexpr MetricLabelSpec kKeyBySource[] = {{"key", {}}, {"source", kTokenSources}};
constexpr MetricLabelSpec kKeyByTarget[] = {{"key", {}}, {"to", kGlobalLimitTargets}};
constexpr MetricLabelSpec kKeyByKind[] = {{"key", {}}, {"kind", kRepairKinds}};

// In MetricId order (checked below).
constexpr MetricSpec kCatalog[] = {
    // Client.
    {MetricId::kClientCalls, "grpc_resilience_client_calls_total", T::kCounter,
     "Calls the application made, by the status it finally got (one per call, however many "
     "attempts it took).",
     kClientByCode},
    {MetricId::kClientAttempts, "grpc_resilience_client_attempts_total", T::kCounter,
     "Attempts made: each attempt of a retried call, the one attempt of any other call.", kClient},
    {MetricId::kClientRetries, "grpc_resilience_client_retries_total", T::kCounter,
     "Attempts after the first.", kClient},
    {MetricId::kClientHedges, "grpc_resilience_client_hedges_total", T::kCounter,
     "Of the attempts after the first, the hedges of hedged calls (included in retries_total).",
     kClient},
    {MetricId::kClientRetriesRefused, "grpc_resilience_client_retries_refused_total", T::kCounter,
     "Retries the policy allowed but not made: retry budget spent, or the server's pushback.",
     kClientByReason},
    {MetricId::kClientUnretriedCalls, "grpc_resilience_client_unretried_calls_total", T::kCounter,
     "Calls of a retried method passed through without retry (not from a generated stub).",
     kClient},
    {MetricId::kClientLocalRejections, "grpc_resilience_client_local_rejections_total", T::kCounter,
     "Attempts failed here without reaching the server, by cause.", kClientByCause},
    {MetricId::kClientFallbacks, "grpc_resilience_client_fallbacks_total", T::kCounter,
     "Calls answered by the method's fallback instead of their failure, by cause (the failure "
     "is still counted in calls_total).",
     kClientByFallbackCause},
    {MetricId::kClientShadowRejections, "grpc_resilience_client_shadow_rejections_total",
     T::kCounter,
     "Calls a policy in shadow mode would have rejected and let through, by policy and reason "
     "(real rejections are in local_rejections_total).",
     kClientByShadowReason},
    {MetricId::kClientAttemptTimeouts, "grpc_resilience_client_attempt_timeouts_total", T::kCounter,
     "Attempts ended by their per-attempt timeout (not the call's deadline).", kClient},
    {MetricId::kClientBreakerState, "grpc_resilience_client_breaker_state", T::kGauge,
     "1 for the circuit breaker's current state, 0 for the other two.", kClientByState},
    {MetricId::kClientBreakerDropProbability, "grpc_resilience_client_breaker_drop_probability",
     T::kGauge,
     "The share of calls the breaker rejects now (SRE: its drop probability; three-state: 1 "
     "when open).",
     kClient},
    {MetricId::kClientBreakerTransitions, "grpc_resilience_client_breaker_transitions_total",
     T::kCounter, "Circuit breaker state changes.", kClientByTransition},
    {MetricId::kClientBreakerRejectionsWaived,
     "grpc_resilience_client_breaker_rejections_waived_total", T::kCounter,
     "Attempts the method's breaker would have rejected, let through because the service as a "
     "whole is not failing (its per-endpoint breakers).",
     kClient},
    {MetricId::kClientEndpointBreakers, "grpc_resilience_client_endpoint_breakers", T::kGauge,
     "Endpoints by the state of their breaker: one series per endpoint (1 in its state, 0 in "
     "the others) for the first 16 by name, the rest summed under endpoint=\"other\".",
     kClientByEndpointState},
    {MetricId::kClientHealthProbes, "grpc_resilience_client_health_probes_total", T::kCounter,
     "Health probes of breaker.recoveryProbe answered, for the method's breaker or for one of "
     "its endpoints' (summed over the endpoints), by answer: serving, not_serving, unreachable "
     "(no answer, or an error), unknown (no health service for the name).",
     kClientByProbe},
    {MetricId::kClientCallDuration, "grpc_resilience_client_call_duration_seconds", T::kHistogram,
     "Call latency as the application saw it, from start to final status, retries and "
     "backoff included.",
     kClient},
    {MetricId::kClientPolicyGeneration, "grpc_resilience_client_policy_generation", T::kGauge,
     "The generation of the channel's policies in force: 1 as created, one more per update.",
     kChannel},
    {MetricId::kClientPolicyReloadFailures, "grpc_resilience_client_policy_reload_failures_total",
     T::kCounter, "Policy files that failed to load on a reload (nothing changed).", kChannel},
    // Server.
    {MetricId::kServerCalls, "grpc_resilience_server_calls_total", T::kCounter,
     "Calls the server answered, by the status sent, rejected ones included.", kServerByCode},
    {MetricId::kServerRejections, "grpc_resilience_server_rejections_total", T::kCounter,
     "Calls answered without running the handler, by cause: the concurrency limit, the rate "
     "limit, fault injection's abort.",
     kServerByCause},
    {MetricId::kServerInFlight, "grpc_resilience_server_in_flight", T::kGauge,
     "Admitted calls whose status has not been sent yet.", kServer},
    {MetricId::kServerHandlerDuration, "grpc_resilience_server_handler_duration_seconds",
     T::kHistogram, "From admission to status of admitted calls, injected delays included.",
     kServer},
    {MetricId::kServerInjectedDelays, "grpc_resilience_server_injected_delays_total", T::kCounter,
     "Calls fault injection delayed.", kServer},
    {MetricId::kServerExpiredWhileDelayed, "grpc_resilience_server_expired_while_delayed_total",
     T::kCounter,
     "Delayed calls whose deadline passed during the injected delay (handler skipped).", kServer},
    {MetricId::kServerConcurrencyLimit, "grpc_resilience_server_concurrency_limit", T::kGauge,
     "The concurrency limit of the method's throttle now: fixed, or where an adaptive limit "
     "stands.",
     kServer},
    {MetricId::kServerPolicyGeneration, "grpc_resilience_server_policy_generation", T::kGauge,
     "The generation of the server's policies in force: 1 as started, one more per update.",
     {}},
    {MetricId::kServerPolicyReloadFailures, "grpc_resilience_server_policy_reload_failures_total",
     T::kCounter, "Policy files that failed to load on a reload (nothing changed).", {}},
    {MetricId::kServerRejectionsByCriticality,
     "grpc_resilience_server_rejections_by_criticality_total", T::kCounter,
     "Calls the throttle rejected, by the criticality they were judged at (shown once a call of "
     "the method carried a criticality).",
     kServerByCriticality},
    {MetricId::kServerCriticalityInvalid, "grpc_resilience_server_criticality_invalid_total",
     T::kCounter,
     "Calls whose resilience-criticality header named no level (judged at the method's "
     "default).",
     kServer},
    {MetricId::kServerShadowRejections, "grpc_resilience_server_shadow_rejections_total",
     T::kCounter,
     "Calls a server policy in shadow mode would have rejected and let through, by policy (shown "
     "for a policy in shadow, or once it counted one).",
     kServerByShadowPolicy},
    // Per-caller limits.
    {MetricId::kServerPerCallerKeys, "grpc_resilience_server_per_caller_keys", T::kGauge,
     "Caller keys the scope's throttle.perCaller tracks now (at most its maxKeys).", kScope},
    {MetricId::kServerPerCallerKeysEvicted, "grpc_resilience_server_per_caller_keys_evicted_total",
     T::kCounter, "Idle caller keys forgotten to make room for a new key.", kScope},
    {MetricId::kServerPerCallerKeysHashed, "grpc_resilience_server_per_caller_keys_hashed_total",
     T::kCounter,
     "Calls whose caller key was too long or not printable ASCII and was tracked as its hash.",
     kScope},
    {MetricId::kServerPerCallerOverflow, "grpc_resilience_server_per_caller_overflow_total",
     T::kCounter,
     "Calls of a new caller key judged in the default bucket: every tracked key had calls in "
     "flight.",
     kScope},
    {MetricId::kServerPerCallerRejections, "grpc_resilience_server_per_caller_rejections_total",
     T::kCounter,
     "Calls refused by their caller key's own concurrency or rate limit, or its fleet-wide "
     "rate (global_rate).",
     kScopeByCause},
    // Fleet-wide rate limits.
    {MetricId::kGlobalLimitUsingStore, "grpc_resilience_server_global_limit_using_store", T::kGauge,
     "1 while the fleet-wide rate limit is taken from Redis, 0 while the server admits its "
     "local share (Redis unreachable or not reached yet).",
     kKey},
    {MetricId::kGlobalLimitAdmitted, "grpc_resilience_server_global_limit_admitted_total",
     T::kCounter,
     "Calls the fleet-wide rate limit admitted, by where the token came from: a lease from "
     "Redis or the local share.",
     kKeyBySource},
    {MetricId::kGlobalLimitTokensLeased, "grpc_resilience_server_global_limit_tokens_leased_total",
     T::kCounter, "Tokens this server leased from the fleet's bucket in Redis.", kKey},
    {MetricId::kGlobalLimitTokensExpired,
     "grpc_resilience_server_global_limit_tokens_expired_total", T::kCounter,
     "Leased tokens dropped unused after the lease lifetime.", kKey},
    {MetricId::kGlobalLimitLeaseFailures,
     "grpc_resilience_server_global_limit_lease_failures_total", T::kCounter,
     "Lease round trips to Redis that failed (connect, timeout, error reply).", kKey},
    {MetricId::kGlobalLimitTransitions, "grpc_resilience_server_global_limit_transitions_total",
     T::kCounter,
     "Changes between the global limit and the local share: to=\"local_share\" when Redis "
     "became unreachable, to=\"global\" when it answered again.",
     kKeyByTarget},
    {MetricId::kGlobalLimitBucketRepairs,
     "grpc_resilience_server_global_limit_bucket_repairs_total", T::kCounter,
     "Leases that found the fleet's bucket in Redis lost (kind=\"key_lost\": started again "
     "full), holding values out of range (kind=\"bad_value\": clamped) or a timestamp ahead "
     "of Redis's clock (kind=\"clock_back\": taken as now).",
     kKeyByKind},
};

constexpr bool InIdOrder() {
  for (size_t i = 0; i < sizeof(kCatalog) / sizeof(kCatalog[0]); ++i) {
    if (static_cast<size_t>(kCatalog[i].id) != i) return false;
  }
  return true;
}
static_assert(InIdOrder(), "kCatalog must list the metrics in MetricId order, one each");
static_assert(static_cast<size_t>(MetricId::kGlobalLimitBucketRepairs) + 1 ==
                  sizeof(kCatalog) / sizeof(kCatalog[0]),
              "every MetricId needs its entry in kCatalog");

}  // namespace

absl::Span<const MetricSpec> MetricCatalog::All() { return kCatalog; }

const MetricSpec& MetricCatalog::Get(MetricId id) { return kCatalog[static_cast<size_t>(id)]; }

PrometheusText::Family& MetricCatalog::Declare(PrometheusText& text, MetricId id) {
  const MetricSpec& spec = Get(id);
  switch (spec.type) {
    case MetricType::kCounter:
      return text.Counter(spec.name, spec.help);
    case MetricType::kGauge:
      return text.Gauge(spec.name, spec.help);
    case MetricType::kHistogram:
      return text.Histogram(spec.name, spec.help);
  }
  return text.Counter(spec.name, spec.help);  // not reached: every type is handled above
}

}  // namespace resilience
