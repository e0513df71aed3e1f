/// \file include/grpc_resilience/status_report.h
///
/// What a person on call wants to see at a glance: per method, on the client
/// and on the server, whether a breaker is open and for how long, how full the
/// retry budget is, which limits bind. ClientResilience::AppendStatus(),
/// ServerResilience::AppendStatus() and RecentEvents::AppendStatus() fill a
/// StatusReport; ToJson() and ToHtml() render it (MetricsHttpServer serves
/// them at /status.json and /status). Pure C++ and Abseil; implemented in
/// src/metrics (library grpc_resilience::metrics).

#ifndef GRPC_RESILIENCE_STATUS_REPORT_H_
#define GRPC_RESILIENCE_STATUS_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpc_resilience/breaker_state.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// One endpoint (server) of a client method, as its breaker sees it.
struct GRPC_RESILIENCE_EXPORT EndpointStatus {
  std::string endpoint;  ///< gRPC's peer name, "ipv4:10.0.0.2:50051"
  BreakerSnapshot breaker;  ///< its breaker now
  int64_t outcomes = 0;  ///< attempts that ended on it
  int64_t refused = 0;   ///< of those, the ones its open breaker did not count
};

/// One endpoint of a channel whose policy file turns on the library's
/// endpoint picker (loadBalancingConfig: resilience_p2c), as it picks.
struct GRPC_RESILIENCE_EXPORT RoutedEndpointStatus {
  std::string channel;   ///< ClientResilience::name()
  std::string method;    ///< "/pkg.Service/Method": each method picks on its own figures
  std::string endpoint;  ///< "ipv4:10.0.0.2:50051"
  int64_t picks = 0;         ///< attempts sent there
  int64_t retries_here = 0;  ///< of those, retries and hedges
  int in_flight = 0;         ///< attempts on it now
  absl::Duration latency;    ///< its latency estimate (zero: no sample yet)
  double error_share = 0;    ///< recent failures' share, in [0, 1]
  std::optional<double> load;  ///< the utilization its server last reported
  double weight = 1;           ///< slow start: in [0.1, 1], 1 when done
  /// Why it gets no attempts, empty when it does: "not connected",
  /// "breaker open", "forced open".
  std::string out;
};

/// One method of one client channel.
struct GRPC_RESILIENCE_EXPORT ClientMethodStatus {
  std::string channel;  ///< ClientResilience::name()
  std::string method;   ///< "/pkg.Service/Method"
  /// The breaker ("sre" or "three_state") and how it stands; empty kind and
  /// no snapshot without one.
  std::string breaker_kind;
  std::optional<BreakerSnapshot> breaker;  ///< its breaker now; nullopt without one
  /// The method's breakers per endpoint (breaker.endpoints), by name.
  std::vector<EndpointStatus> endpoints;
  /// Counters since the channel was made (ClientMethodStats).
  int64_t calls = 0;
  int64_t attempts = 0;  ///< ClientMethodStats::attempts
  int64_t retries = 0;   ///< ClientMethodStats::retries
  /// Rejected by the method's breaker or bulkhead (ClientMethodStats::
  /// rejected_by_breaker + rejected_by_bulkhead).
  int64_t rejected_locally = 0;
  /// Per second since the previous report of the same page (RatesSince());
  /// nullopt when there is none.
  std::optional<double> calls_per_second;
  std::optional<double> rejections_per_second;  ///< local rejections per second, likewise
  /// The enforcement modes ("enforce", "shadow", "off"; docs/shadow-mode.md)
  /// of the method's breaker and bulkhead; empty without one. A breaker that
  /// is off decides nothing: its state is not shown.
  std::string breaker_enforcement;
  std::string bulkhead_enforcement;  ///< see breaker_enforcement
  /// Calls its breaker or bulkhead in shadow mode would have rejected and
  /// let through (ClientMethodStats::shadow_rejected_by_breaker +
  /// shadow_rejected_by_bulkhead).
  int64_t shadow_rejected = 0;
};

/// One method of a server.
struct GRPC_RESILIENCE_EXPORT ServerMethodStatus {
  std::string server;  ///< a name the application gave (may be empty)
  std::string method;     ///< "/pkg.Service/Method"
  int64_t admitted = 0;  ///< ServerMethodStats::admitted
  int64_t rejected = 0;  ///< by the throttle: concurrency, rate, CPU gate, retries, deadline
  /// Of `rejected`, the retried attempts refused under throttle.retryShedding
  /// (ServerMethodStats::rejected_retry).
  int64_t rejected_retries = 0;
  int64_t in_flight = 0;  ///< ServerMethodStats::in_flight
  /// Where the scope's concurrency limit stands (fixed or adaptive; an
  /// adaptive one not made yet: its initial limit); 0: none.
  int64_t concurrency_limit = 0;
  bool adaptive_limit = false;  ///< whether that limit is adaptive
  double rate_limit = 0;  ///< the scope's ratePerSecond; 0: no rate limit
  int rate_burst = 0;     ///< the scope's rate burst; 0: no rate limit
  /// The throttle's policies that do not enforce, with their mode
  /// ("throttle: shadow, cpu: off"; docs/shadow-mode-server.md); empty when
  /// every one enforces.
  std::string enforcement;
  /// Calls its policies in shadow would have rejected and let through
  /// (ServerMethodStats::shadow_throttle and the others, summed).
  int64_t shadow_rejected = 0;
  /// Per second since the previous report of the same page (RatesSince());
  /// nullopt when there is none.
  ///@{
  std::optional<double> calls_per_second;
  std::optional<double> rejections_per_second;
  ///@}
};

/// A channel's retryThrottling bucket (gRFC A6).
struct GRPC_RESILIENCE_EXPORT RetryThrottleStatus {
  std::string channel;  ///< ClientResilience::name()
  double tokens = 0;    ///< tokens left, in [0, max_tokens]
  int max_tokens = 0;   ///< the bucket's size
};

/// A channel whose health checking cannot work (HealthCheckEvent): its
/// healthCheckConfig.serviceName is unknown to the server at `endpoint`.
struct GRPC_RESILIENCE_EXPORT HealthCheckStatus {
  std::string channel;   ///< ClientResilience::name()
  std::string endpoint;  ///< the server's address, as HealthCheckEvent::endpoint
  std::string service;   ///< healthCheckConfig.serviceName
  std::string problem;   ///< what was found, and what to do
};

/// An event as the page lists it: when, and FormatEvent()'s line.
struct GRPC_RESILIENCE_EXPORT StatusEvent {
  absl::Time at;     ///< when RecentEvents heard it (wall clock)
  std::string text;  ///< FormatEvent()'s line
};

/// StatusReport
///
/// What the status page shows: a row per client and server method, the
/// retry buckets, the recent events. Plain data; copyable. Rows come in the order they were added.
struct GRPC_RESILIENCE_EXPORT StatusReport {
  /// When it was made; left at the epoch, MetricsHttpServer sets it to the
  /// time of the request.
  absl::Time generated_at = absl::UnixEpoch();
  std::vector<ClientMethodStatus> client_methods;   ///< one row per channel and method
  std::vector<ServerMethodStatus> server_methods;   ///< one row per server and method
  std::vector<RetryThrottleStatus> retry_throttles;  ///< one per channel that has one
  /// Health checking that cannot work, as the clients found it.
  std::vector<HealthCheckStatus> health_checks;
  /// The endpoints of channels with the library's picker.
  std::vector<RoutedEndpointStatus> routed_endpoints;
  /// Newest first.
  std::vector<StatusEvent> recent_events;

  /// RatesSince()
  ///
  /// Fills the per-second rates of every row from the same row (channel or
  /// server, and method) of `previous`, a report made earlier; a row that
  /// `previous` lacks counts from zero (its method had no state then: no
  /// call). No time passed, or a counter that went down (a new channel
  /// under the same name): nullopt.
  void RatesSince(const StatusReport& previous);

  /// ToJson()
  ///
  /// One JSON object: {"generated_at": RFC 3339, "client_methods": [...],
  /// "server_methods": [...], "retry_throttles": [...], "health_checks":
  /// [...], "routed_endpoints": [...], "recent_events": [...]}, the fields
  /// named as above (a routed endpoint's latency as "latency_seconds") (a snapshot's under "breaker":
  /// state, mode, time_in_state_seconds, calls_in_window, failure_rate,
  /// slow_call_rate, drop_probability; a client method's "endpoints": an
  /// array of {endpoint, breaker, outcomes, refused}); absent values are null.
  std::string ToJson() const;

  /// ToHtml()
  ///
  /// A self-contained page (no external script, style or image) with one
  /// table per side, open breakers and binding limits highlighted, and the
  /// recent events; it reloads itself every `refresh` (zero: never).
  std::string ToHtml(absl::Duration refresh = absl::Seconds(2)) const;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_STATUS_REPORT_H_
