/// \file include/grpc_resilience/client_resilience.h
///
/// The resilience state of one client channel, as its user sees it: per
/// method, the counters (Stats()), the breaker (BreakerSnapshotOf()), the
/// Prometheus metrics (AppendMetrics()), and the channel's retryThrottling.
///
/// \code
///   resilience::ResilientChannel made = resilience::CreateResilientChannel(...);
///   resilience::ClientMethodStats s = made.resilience->Stats("/pkg.Service/Method");
///   std::cout << s.calls << " calls, " << s.retries << " retries\n";
/// \endcode
///
/// What each counter counts on the client: docs/accounting.md.

#ifndef GRPC_RESILIENCE_CLIENT_RESILIENCE_H_
#define GRPC_RESILIENCE_CLIENT_RESILIENCE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_update.h"
#include "grpc_resilience/status_report.h"

namespace resilience {

/// Counters of one method on one channel, as read by ClientResilience::Stats().
struct GRPC_RESILIENCE_EXPORT ClientMethodStats {
  /// Logical calls the application made (each unary call once, however many
  /// attempts it took), counted when they start.
  int64_t calls = 0;
  /// Attempts made, with or without a breaker: each attempt of a retried
  /// call, and the one attempt of every other call, including those the
  /// breaker rejected. attempts - retries = calls that made an attempt.
  int64_t attempts = 0;
  /// Attempts after a call's first: retries, or a hedged call's hedges.
  int64_t retries = 0;
  /// Of those, a hedged call's hedges (retries - hedges = retries proper).
  int64_t hedges = 0;
  /// Attempts our circuit breaker refused (they never reached the network).
  int64_t rejected_by_breaker = 0;
  /// Attempts the method's breaker would have refused, sent anyway because
  /// the service as a whole was not failing (per-endpoint breakers:
  /// EndpointStats()).
  int64_t breaker_rejections_waived = 0;
  /// Attempts that hit their per-attempt timeout (not the call's deadline).
  int64_t attempt_timeouts = 0;
  /// Retries not made because the retry budget was spent (hedged calls:
  /// calls whose hedges the budget stopped).
  int64_t retry_budget_exhausted = 0;
  /// Retries not made because the server's pushback said not to.
  int64_t pushback_stops = 0;
  /// Unary calls of a retried method passed through without retry because
  /// they did not come from a protobuf generated stub (e.g. a GenericStub).
  int64_t not_retried_stub_calls = 0;
  /// Unary calls that waited in the policy's bulkhead queue for a slot.
  int64_t bulkhead_waits = 0;
  /// Unary calls the bulkhead rejected (its queue full, or the wait ended
  /// without a slot): UNAVAILABLE at once, RejectedLocally(), never sent.
  int64_t rejected_by_bulkhead = 0;
  /// Calls answered by the method's fallback (fallback.h) instead of their
  /// failure, by FallbackCause: the breaker, the bulkhead or a spent retry
  /// budget refused them, or they failed after their retries. Each is still
  /// counted in calls_by_code with the status it would have ended with.
  int64_t fallbacks_breaker = 0;
  int64_t fallbacks_bulkhead = 0;    ///< see fallbacks_breaker
  int64_t fallbacks_retry_budget = 0;  ///< see fallbacks_breaker
  int64_t fallbacks_failed = 0;      ///< see fallbacks_breaker
  /// With Options::metrics: the calls by the final status the application
  /// got (CallsWithCode()), counted when they end, and their latency from
  /// start to final status, retries and backoff included.
  StatusCodeCountsSnapshot calls_by_code;
  LatencyHistogramSnapshot latency;  ///< their latency (see calls_by_code)
  /// With breaker.recoveryProbe: grpc.health.v1 Checks sent for the method's
  /// breaker (never counted as calls or attempts), and their answers.
  int64_t health_probes = 0;
  int64_t health_probes_serving = 0;      ///< SERVING answers
  int64_t health_probes_not_serving = 0;  ///< NOT_SERVING, or no answer
  /// Breaker state changes, [from][to] indexed by BreakerState
  /// (kClosed, kOpen, kHalfOpen).
  std::array<std::array<int64_t, 3>, 3> breaker_transitions{};
  /// Shadow mode (docs/shadow-mode.md): calls the method's breaker (with its
  /// endpoint breakers) would have rejected and let through, and the same
  /// for its bulkhead (queue full, no time to wait, or its wait would have
  /// ended without a slot). Real rejections are in rejected_by_breaker and
  /// rejected_by_bulkhead.
  int64_t shadow_rejected_by_breaker = 0;
  int64_t shadow_rejected_by_bulkhead = 0;  ///< see shadow_rejected_by_breaker
  /// The enforcement modes of the method's breaker and bulkhead now
  /// (kEnforce when it has none).
  EnforcementMode breaker_enforcement = EnforcementMode::kEnforce;
  EnforcementMode bulkhead_enforcement = EnforcementMode::kEnforce;  ///< see breaker_enforcement

  /// The calls that ended with `code` (a grpc::StatusCode's number; any
  /// number above 16 counts in one "other" slot).
  uint64_t CallsWithCode(int code) const;
  /// All calls answered by a fallback, whatever the cause.
  int64_t Fallbacks() const {
    return fallbacks_breaker + fallbacks_bulkhead + fallbacks_retry_budget + fallbacks_failed;
  }
  /// The transitions from `from` to `to`.
  int64_t Transitions(BreakerState from, BreakerState to) const {
    return breaker_transitions[static_cast<size_t>(from)][static_cast<size_t>(to)];
  }
};

/// The breaker of one endpoint (a server, named as gRPC names the peer, e.g.
/// "ipv4:10.0.0.1:443") of one method on one channel, as read by
/// ClientResilience::EndpointStats().
struct GRPC_RESILIENCE_EXPORT EndpointBreakerStats {
  std::string endpoint;     ///< gRPC's peer name, "ipv4:10.0.0.1:443"
  BreakerSnapshot breaker;  ///< its breaker now
  /// Attempts with an outcome that ended on this endpoint, and of those the
  /// ones its breaker did not count (it was open).
  int64_t outcomes = 0;
  int64_t refused = 0;  ///< of those, the ones its open breaker did not count
  /// How long ago an attempt last ended on it.
  absl::Duration since_seen = absl::ZeroDuration();
};

/// The channel's retryThrottling (gRFC A6) as it is now.
struct GRPC_RESILIENCE_EXPORT RetryThrottleState {
  /// Tokens left, in [0, max_tokens]; retries and hedges stop at half of
  /// max_tokens or below.
  double tokens = 0;
  int max_tokens = 0;  ///< the bucket's size (retryThrottling's maxTokens)
  /// Tokens a success gives back.
  double token_ratio = 0;
};

class ClientResilienceImpl;  // the engine; internal to the library

/// ClientResilience
///
/// The resilience state of one channel: counters, breakers, metrics, live
/// policy updates. Made by CreateResilientChannel() (resilient_channel.h),
/// one per channel, or by you for ClientInterceptorFactories(). Thread-safe; its methods take
/// snapshots and are safe while calls run.
class GRPC_RESILIENCE_EXPORT ClientResilience {
 public:
  /// How the state is made: what the channel is called, who hears of its
  /// events, what it counts.
  struct Options {
    /// Seed of the retry jitter and the SRE drop decisions.
    uint64_t seed = 1;
    /// Names the channel in messages (e.g. its target), and in the `channel`
    /// label of its metrics.
    std::string name;
    /// Told of every breaker transition of every method (LogEvents prints
    /// them); null: nobody.
    std::shared_ptr<ResilienceEvents> events;
    /// Count every method's calls, with or without a policy: by final status
    /// and latency (AppendMetrics(), AllStats()). A call with none of our
    /// interceptors then gets a minimal one that only counts. false: methods
    /// without a policy pass through untouched, and no call is counted by
    /// status or latency (the other counters are kept).
    bool metrics = true;
  };

  /// The state for `policies`; its breakers run on the real clock.
  ClientResilience(PolicySet policies, Options options);
  /// Over an engine the library made (its internal route, e.g. a breaker
  /// clock for tests); `impl` must not be null.
  explicit ClientResilience(std::shared_ptr<ClientResilienceImpl> impl);
  ~ClientResilience();

  ClientResilience(const ClientResilience&) = delete;
  ClientResilience& operator=(const ClientResilience&) = delete;

  /// Stats() / BreakerSnapshotOf()
  ///
  /// The counters and the breaker of `method` ("/pkg.Service/Method"); zeros
  /// / nullopt when it was not called yet or has no breaker.
  ///@{
  ClientMethodStats Stats(absl::string_view method) const;
  std::optional<BreakerSnapshot> BreakerSnapshotOf(absl::string_view method) const;
  ///@}

  /// AllStats()
  ///
  /// The counters of every method called so far (with Options::metrics,
  /// those without a policy too), sorted by method name.
  std::vector<std::pair<std::string, ClientMethodStats>> AllStats() const;

  /// EndpointStats()
  ///
  /// The per-endpoint breakers of `method` (breaker.endpoints), sorted by
  /// endpoint; empty when it has none or no attempt ended on an endpoint
  /// yet. Its breaker rejects calls locally only while the service as a
  /// whole is failing (docs/endpoint-breakers.md).
  std::vector<EndpointBreakerStats> EndpointStats(absl::string_view method) const;

  /// AppendMetrics()
  ///
  /// Adds this channel's metrics to `text`, the families of docs/metrics.md
  /// (grpc_resilience_client_*), every sample labelled grpc_method and
  /// channel (Options::name): one sample set per method called so far, in
  /// method order. Families are declared in a fixed order, so several
  /// channels (give them different names) and a ServerResilience can add to
  /// the same text.
  void AppendMetrics(PrometheusText& text) const;

  /// The channel's name (Options::name): in messages and in the `channel`
  /// label of its metrics.
  const std::string& name() const;

  /// ControlBreaker()
  ///
  /// Gives an operator's `command` to the breaker of `method` on this
  /// channel (BreakerCommand: force_open, force_closed, automatic, reset),
  /// e.g. to force it open during an incident or closed after a false trip.
  /// A method the policy file covers but that was not called yet gets its
  /// breaker now, so it can be forced before its first call. NotFound when no
  /// policy of this channel gives `method` a breaker. Every command, applied
  /// or not, becomes an OperatorEvent for Options::events, delivered on this
  /// thread with `origin` naming who asked (e.g. "api"). Thread-safe; calls in
  /// flight end as usual.
  absl::Status ControlBreaker(absl::string_view method, BreakerCommand command,
                              absl::string_view origin = "api");

  /// SetEnforcement()
  ///
  /// An operator's enforcement mode for `policy` (kBreaker: the method's
  /// breaker and its endpoint breakers; kBulkhead) of `method` on this
  /// channel: kEnforce, kShadow (decides, counts and reports what it would
  /// have rejected, lets every call through) or kOff, in place: the
  /// breaker's and bulkhead's state is kept (docs/shadow-mode.md). The mode
  /// holds until changed again here or until an Update() changes the
  /// policy's `enforcement` in the file (an update that leaves it as it was
  /// keeps this one). NotFound when no policy of this channel gives `method`
  /// that policy; InvalidArgument for a server's policy (kThrottle,
  /// kPerCaller, kCpu, kGlobal, kCriticalityShares). Every request becomes
  /// an OperatorEvent (with `enforcement` set) for Options::events, with
  /// `origin`. Thread-safe; calls in flight finish under the mode they
  /// started with.
  absl::Status SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                              EnforcementMode mode, absl::string_view origin = "api");

  /// ControlEndpointBreaker()
  ///
  /// The same for the breaker `method` keeps for one `endpoint` (as
  /// EndpointStats() names it). gRPC's load balancer still picks the
  /// endpoint: forced open, the endpoint's outcomes are not counted and it
  /// counts as failing when the method decides whether the whole service is
  /// failing; forced closed, it never counts as failing. A forced endpoint is
  /// remembered, even unseen, until `automatic`. NotFound when the method
  /// has no endpoint breakers or has not seen `endpoint` (recently).
  absl::Status ControlEndpointBreaker(absl::string_view method, absl::string_view endpoint,
                                      BreakerCommand command, absl::string_view origin = "api");

  /// AppendStatus()
  ///
  /// Adds a row per method the policies name (an entry's method, or each
  /// method linked into the process of a service an entry names), called or
  /// not, and per other method called so far (or ControlBreaker() reached)
  /// to report.client_methods, in method order, and the channel's
  /// retryThrottling to report.retry_throttles when the file has one.
  void AppendStatus(StatusReport& report) const;

  /// The channel's retryThrottling, fed by every call on the channel
  /// whatever its method; nullopt when the policy file has none.
  std::optional<RetryThrottleState> retry_throttle() const;

  /// Update()
  ///
  /// Puts `policies` (a loaded PolicySet) in force for the calls that start
  /// from now on; calls in flight finish with the policies they started with
  /// (each call sees one generation), and none fails or waits because of it.
  /// Per method, an unchanged policy keeps all its state (breaker, endpoint
  /// breakers, retry budget tokens, hedging quantiles); a changed one is
  /// rebuilt keeping what stays meaningful (docs/operations.md, "Reloading
  /// policies"); counters go on. Returns what changed, with warnings for what
  /// a channel only takes when it is created (waitForReady, gRPC's built-in
  /// retries of streams, load balancing). Tells Options::events
  /// (OnPolicyReload) on this thread. Thread-safe; updates are serialized.
  absl::StatusOr<PolicyUpdate> Update(const PolicySet& policies);

  /// ReloadFile()
  ///
  /// Loads `path` as PolicySet::FromJsonFile() does and Update()s with it. A
  /// file that fails to load changes nothing: its error (naming the path,
  /// the field and the value) is returned, counted in
  /// grpc_resilience_client_policy_reload_failures_total and told to
  /// Options::events.
  absl::StatusOr<PolicyUpdate> ReloadFile(const std::string& path,
                                          const PolicySet::LoadOptions& options = {});

  /// The generation of the policies in force: 1 as created, one more per
  /// Update().
  int64_t policy_generation() const;

  /// The engine behind this object, for the library's own code (its type is
  /// declared in no installed header).
  const std::shared_ptr<ClientResilienceImpl>& impl() const { return impl_; }

 private:
  const std::shared_ptr<ClientResilienceImpl> impl_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_CLIENT_RESILIENCE_H_
