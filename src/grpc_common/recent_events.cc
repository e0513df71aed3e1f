#include "grpc_resilience/recent_events.h"

#include <utility>

#include "src/core/clock.h"
#include "src/metrics/printable_text.h"

namespace resilience {

RecentEvents::RecentEvents(size_t capacity, std::shared_ptr<ResilienceEvents> next)
    : capacity_(capacity), next_(std::move(next)) {}

void RecentEvents::OnBreakerTransition(const BreakerEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnBreakerTransition(event);
}

void RecentEvents::OnThrottleSaturation(const ThrottleEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnThrottleSaturation(event);
}

void RecentEvents::OnOperatorAction(const OperatorEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnOperatorAction(event);
}

void RecentEvents::OnPolicyReload(const PolicyReloadEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnPolicyReload(event);
}

void RecentEvents::OnHealthCheckProblem(const HealthCheckEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnHealthCheckProblem(event);
}

void RecentEvents::OnShadowDecisions(const ShadowDecisionEvent& event) {
  Keep(FormatEvent(event));
  if (next_ != nullptr) next_->OnShadowDecisions(event);
}

void RecentEvents::Keep(std::string text) {
  if (capacity_ == 0) return;
  // Events carry the library's monotonic times; the page shows wall time.
  // The text may hold what a request gave (an admin request's method).
  StatusEvent event{Clock::Real().WallNow(), PrintableText::Escape(text)};
  absl::MutexLock lock(&mu_);
  events_.push_back(std::move(event));
  while (events_.size() > capacity_) events_.pop_front();
}

void RecentEvents::AppendStatus(StatusReport& report) const {
  absl::MutexLock lock(&mu_);
  report.recent_events.insert(report.recent_events.end(), events_.rbegin(), events_.rend());
}

}  // namespace resilience
