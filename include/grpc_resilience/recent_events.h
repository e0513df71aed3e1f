/// \file include/grpc_resilience/recent_events.h
///
/// The last events, kept for the status page: a ResilienceEvents that
/// remembers the newest N lines (FormatEvent()) with the wall time it heard
/// them, and passes every event on to another listener. Implemented in
/// src/grpc_common (library grpc_resilience::grpc_common, linked by
/// grpc_resilience::client and grpc_resilience::server).

#ifndef GRPC_RESILIENCE_RECENT_EVENTS_H_
#define GRPC_RESILIENCE_RECENT_EVENTS_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "grpc_resilience/export.h"
#include "grpc_resilience/resilience_events.h"
#include "grpc_resilience/status_report.h"

namespace resilience {

/// RecentEvents
///
/// The last events, for the status page. Give the same RecentEvents to the
/// client's and the server's Options::events (it forwards to `next`, e.g. a
/// LogEvents, when that is not null), and call AppendStatus() when rendering
/// the status page. Thread-safe.
///
/// Example:
/// \code
///   auto recent = std::make_shared<RecentEvents>(50, std::make_shared<LogEvents>());
///   client_options.events = recent;
///   ...
///   StatusReport report;
///   recent->AppendStatus(report);
/// \endcode
class GRPC_RESILIENCE_EXPORT RecentEvents final : public ResilienceEvents {
 public:
  /// Keeps the newest `capacity` events and passes each on to `next`
  /// (none when null).
  explicit RecentEvents(size_t capacity = 50, std::shared_ptr<ResilienceEvents> next = nullptr);

  /// Keeps the event's line (FormatEvent()) and passes the event on.
  ///@{
  void OnBreakerTransition(const BreakerEvent& event) override;
  void OnThrottleSaturation(const ThrottleEvent& event) override;
  void OnOperatorAction(const OperatorEvent& event) override;
  void OnPolicyReload(const PolicyReloadEvent& event) override;
  void OnHealthCheckProblem(const HealthCheckEvent& event) override;
  void OnShadowDecisions(const ShadowDecisionEvent& event) override;
  ///@}

  /// The kept events, newest first, into report.recent_events (after what it
  /// holds).
  void AppendStatus(StatusReport& report) const;

 private:
  void Keep(std::string text) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t capacity_;
  const std::shared_ptr<ResilienceEvents> next_;
  mutable absl::Mutex mu_;
  std::deque<StatusEvent> events_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_RECENT_EVENTS_H_
