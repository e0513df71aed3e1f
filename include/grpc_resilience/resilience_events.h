/// \file include/grpc_resilience/resilience_events.h
///
/// What an operator wants to hear about as it happens: a circuit breaker that
/// changes state, a throttle that starts or stops rejecting. Give a
/// ResilienceEvents to ClientResilience::Options::events (client) or
/// ServerResilienceOptions::events (server); LogEvents writes one line per
/// event. Implemented in src/grpc_common (library grpc_resilience::grpc_common,
/// linked by grpc_resilience::client and grpc_resilience::server).

#ifndef GRPC_RESILIENCE_RESILIENCE_EVENTS_H_
#define GRPC_RESILIENCE_RESILIENCE_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/breaker_state.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/policy_update.h"

namespace resilience {

/// A client breaker changed state.
struct GRPC_RESILIENCE_EXPORT BreakerEvent {
  std::string channel;  ///< ClientResilience::name(), e.g. the target
  std::string method;   ///< "/pkg.Service/Method"
  BreakerTransition transition;  ///< from, to, when, why
  BreakerSnapshot snapshot;      ///< just after the change: counts and rates
  /// Empty: the method's breaker. Otherwise the breaker of this endpoint of
  /// the method (per-endpoint breakers; gRPC's peer name, e.g.
  /// "ipv4:10.0.0.1:443").
  std::string endpoint;
};

/// A server throttle started rejecting calls (saturated), or admitted a call
/// after rejecting none for kThrottleQuietPeriod (recovered). A scope that
/// admits some calls and rejects others, as it does under a steady overload,
/// stays saturated: one event when the overload starts, one when it is over.
struct GRPC_RESILIENCE_EXPORT ThrottleEvent {
  /// Which of the two changes.
  enum class Kind {
    kSaturated,  ///< the scope started rejecting calls
    kRecovered   ///< the scope admitted a call after a quiet period
  };
  Kind kind;  ///< which change
  std::string method;  ///< the call that saw the change
  std::string scope;   ///< what the limit covers: "svc/method", "svc/" or "" (every method)
  /// What rejected: "concurrency", "rate" or "global_rate" (empty for kRecovered).
  absl::string_view cause;
  absl::Time at;  ///< when the change was seen (wall clock)
  /// kRecovered only: how long the scope was saturated (from its first
  /// rejection to its last) and the calls it rejected meanwhile.
  absl::Duration saturated_for = absl::ZeroDuration();
  uint64_t rejected = 0;  ///< kRecovered only: the calls rejected while saturated
};

/// An operator's command to a client breaker (ClientResilience::
/// ControlBreaker(), e.g. through the admin endpoint), or an operator's
/// enforcement mode for a policy (ClientResilience::SetEnforcement():
/// `enforcement` is set), and how it ended.
struct GRPC_RESILIENCE_EXPORT OperatorEvent {
  std::string channel;  ///< ClientResilience::name()
  std::string method;   ///< "/pkg.Service/Method"
  /// The endpoint whose breaker the command was for ("ipv4:10.0.0.2:50051");
  /// empty: the method's breaker.
  std::string endpoint;
  BreakerCommand command;  ///< what the operator asked for
  /// Who asked: "api", or "admin endpoint, peer 127.0.0.1:53112".
  std::string origin;
  /// OK, or why nothing changed (e.g. NotFound: no breaker on the method).
  bool applied = false;
  std::string error;  ///< not applied: why (the Status's message)
  /// The breaker just after the command (when applied).
  BreakerSnapshot snapshot;
  /// Set for SetEnforcement(): the mode asked for `policy` (then `command`
  /// means nothing) and the mode it replaced (when applied).
  std::optional<EnforcementMode> enforcement;
  EnforcedPolicy policy = EnforcedPolicy::kBreaker;  ///< see `enforcement`
  EnforcementMode previous = EnforcementMode::kEnforce;  ///< see `enforcement`
};

/// A policy in shadow mode (docs/shadow-mode.md) would have rejected calls
/// and let them through: reported at the first such decision, then at most
/// once per 10 s with the count since the last report, so that a storm of
/// shadow decisions makes one line per policy and interval (on a server,
/// per throttle scope: the method and policy are the latest call's).
struct GRPC_RESILIENCE_EXPORT ShadowDecisionEvent {
  /// Whose policy: `"channel <name>"` or "server".
  std::string component;
  std::string method;  ///< "/pkg.Service/Method"
  EnforcedPolicy policy = EnforcedPolicy::kBreaker;  ///< which policy decided
  int64_t would_have_rejected = 0;  ///< calls since the last report (`since`)
  int64_t total = 0;                ///< calls since the method's policy was made
  absl::Time since;                 ///< the last report (or `at`, the first time)
  absl::Time at;                    ///< this decision
  /// Why the latest call would have been rejected ("open", "queue_full", ...).
  std::string last_reason;
};

/// Policies were reloaded (ClientResilience::Update() / ReloadFile(), the
/// same on ServerResilience), or a reload failed and changed nothing.
struct GRPC_RESILIENCE_EXPORT PolicyReloadEvent {
  /// What was updated: `"channel <name>"` or "server".
  std::string component;
  /// Where the policies came from (a file's path), or empty.
  std::string source;
  bool applied = false;  ///< whether the new policies are in force
  /// Not applied: why, with the path and the value, as the loader said it.
  std::string error;
  /// Applied: what changed (PolicyUpdate::generation is the new generation).
  /// Not applied: generation is the one still in force.
  PolicyUpdate update;
};

/// A client's health checking cannot work: the server at `endpoint` does not
/// know the healthCheckConfig.serviceName the channel checks (its health
/// service's Check answered NOT_FOUND). gRPC 1.51 takes the SERVICE_UNKNOWN
/// its Watch then reports as NOT_SERVING, so every call of the channel fails
/// UNAVAILABLE ("backend unhealthy"). The client checks when calls fail so.
struct GRPC_RESILIENCE_EXPORT HealthCheckEvent {
  std::string channel;   ///< ClientResilience::name()
  std::string endpoint;  ///< "ipv4:10.0.0.2:50051", or the channel's target
  std::string service;   ///< healthCheckConfig.serviceName
  std::string problem;   ///< what was found, and what to do
};

/// How long a saturated scope must go without rejecting before an admission
/// counts as recovered.
inline constexpr absl::Duration kThrottleQuietPeriod = absl::Seconds(1);

/// ResilienceEvents
///
/// The listener of the library's events: override what you want to hear.
/// Called outside every lock of the library, at most once per change (a
/// breaker's every transition; a throttle's first rejection, and its first
/// admission after a quiet period without rejections). A client breaker's
/// transitions arrive in the order they happened, one at a time: on the
/// thread of a blocking (sync stub) caller whose call caused them, else on
/// the library's events thread (one per process), never on a thread that must
/// not block; a listener that blocks delays later events, not calls. Server
/// events arrive in order on a thread of their ServerResilience (FlushEvents()).
/// Implementations must be thread-safe.
class GRPC_RESILIENCE_EXPORT ResilienceEvents {
 public:
  virtual ~ResilienceEvents() = default;
  /// A client breaker changed state; once per transition, in order.
  virtual void OnBreakerTransition(const BreakerEvent& /*event*/) {}
  /// A server throttle started rejecting (saturated) or admitted again
  /// (recovered).
  virtual void OnThrottleSaturation(const ThrottleEvent& /*event*/) {}
  /// On the operator's thread (the caller of ControlBreaker(), or the admin
  /// endpoint's), after the command's own transitions were delivered.
  virtual void OnOperatorAction(const OperatorEvent& /*event*/) {}
  /// On the thread that called Update() or ReloadFile(), after the new
  /// policies are in force (or, for a failed reload, nothing changed).
  virtual void OnPolicyReload(const PolicyReloadEvent& /*event*/) {}
  /// On the library's events thread, once per endpoint and problem found.
  virtual void OnHealthCheckProblem(const HealthCheckEvent& /*event*/) {}
  /// On the library's events thread: a shadow policy would have rejected
  /// calls (at most one per policy and 10 s).
  virtual void OnShadowDecisions(const ShadowDecisionEvent& /*event*/) {}
};

/// FormatEvent()
///
/// One line, no newline, holding the event's text as it is: a name that came
/// from a request (an admin request's method) may carry any byte, so a sink
/// escapes it (LogEvents and RecentEvents do, with their own time in front):
/// \code{.unparsed}
///   breaker /cache.v1.CacheService/Get on localhost:50051: closed -> open
///   (failure rate 0.62 over 21 calls, threshold 0.50)
///   breaker /cache.v1.CacheService/Get on localhost:50051: closed -> open
///   (5 consecutive failures, threshold 5)
///   throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/*):
///   saturated (concurrency)
///   throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/*):
///   admitting again (saturated for 2.5s, 1234 calls rejected)
/// \endcode
/// A scope reads "svc/Method", "svc/*" (a service's every method) or "every
/// method".
///@{
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const BreakerEvent& event);
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const ThrottleEvent& event);
///@}
/// The same for an operator's command:
/// \code{.unparsed}
///   operator force_open of breaker /cache.v1.CacheService/Get on
///   localhost:50051 (admin endpoint, peer 127.0.0.1:53112): now forced open
///   (own state closed)
/// \endcode
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const OperatorEvent& event);
/// The same for a policy reload, applied or failed:
/// \code{.unparsed}
///   policies reloaded on server from policies.json (generation 3): 2 methods
///   changed, 1 added (changed /a.S/Get, /a.S/Put; added /a.S/Dump)
///   policy reload on server from policies.json failed, generation 2 stays
///   in force: policy file "policies.json": methodConfig[0]...: ...
/// \endcode
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const PolicyReloadEvent& event);
/// The same for a health check that cannot work:
/// \code{.unparsed}
///   health check on localhost:50051 at endpoint ipv4:127.0.0.1:50051:
///   service name "cache.v1.CacheServce" unknown to the server's health
///   service (...)
/// \endcode
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const HealthCheckEvent& event);
/// The same for a shadow policy's decisions:
/// \code{.unparsed}
///   shadow breaker of /cache.v1.CacheService/Get on channel localhost:50051
///   would have rejected 1234 calls in 10s (1300 in all; last: open), let
///   through
/// \endcode
GRPC_RESILIENCE_EXPORT std::string FormatEvent(const ShadowDecisionEvent& event);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_RESILIENCE_EVENTS_H_
