// File: include/grpc_resilience/recent_events.h
//
// The last events, kept for the status page: a ResilienceEvents that
// remembers the newest N lines (FormatEvent()) with the wall time it heard
// them, and passes every event on to another listener. Implemented in
// src/grpc_common (library grpc_resilience::grpc_common, linked by ::client
// and ::server).

#ifndef GRPC_RESILIENCE_RECENT_EVENTS_H_
#define GRPC_RESILIENCE_RECENT_EVENTS_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "grpc_resilience/resilience_events.h"
#include "grpc_resilience/status_report.h"

namespace resilience {

// RecentEvents
//
// Give the same RecentEvents to the client's and the server's Options::events
// (it forwards to `next`, e.g. a LogEvents, when that is not null), and call
// AppendStatus() when rendering the status page. Thread-safe.
//
// Example:
//   auto recent = std::make_shared<RecentEvents>(50, std::make_shared<LogEvents>());
//   client_options.events = recent;
//   ...
//   StatusReport report;
//   recent->AppendStatus(report);
class RecentEvents final : public ResilienceEvents {
 public:
  explicit RecentEvents(size_t capacity = 50, std::shared_ptr<ResilienceEvents> next = nullptr);

  void OnBreakerTransition(const BreakerEvent& event) override;
  void OnThrottleSaturation(const ThrottleEvent& event) override;
  void OnOperatorAction(const OperatorEvent& event) override;
  void OnPolicyReload(const PolicyReloadEvent& event) override;
  void OnHealthCheckProblem(const HealthCheckEvent& event) override;

  // The kept events, newest first, into report.recent_events (after what it
  // holds).
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
