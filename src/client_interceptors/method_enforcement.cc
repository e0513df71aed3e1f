// MethodEnforcement (method_enforcement.h): modes, shadow counts and their
// rate-limited reports.

#include "src/client_interceptors/method_enforcement.h"

#include <utility>

#include "src/client_interceptors/breaker_event_queue.h"

namespace resilience {

absl::string_view ShadowBulkheadReasonName(ShadowBulkheadReason reason) {
  switch (reason) {
    case ShadowBulkheadReason::kQueueFull:
      return "queue_full";
    case ShadowBulkheadReason::kNoTimeToWait:
      return "no_time_to_wait";
    case ShadowBulkheadReason::kWaitExpired:
      return "wait_expired";
  }
  return "unknown";
}

absl::string_view ShadowBreakerReasonLabel(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kOpen:
      return "open";
    case RejectReason::kHalfOpenProbeLimit:
      return "half_open_probe_limit";
    case RejectReason::kHalfOpenProbeInterval:
      return "half_open_probe_interval";
    case RejectReason::kAwaitingConnection:
      return "awaiting_connection";
    case RejectReason::kForcedOpen:
      return "forced_open";
    case RejectReason::kDropped:
      return "dropped";
  }
  return "unknown";
}

void MethodEnforcement::AppendSamples(PrometheusText::Family& family,
                                      const std::vector<MetricLabel>& labels, bool breaker,
                                      bool bulkhead) const {
  const auto sample = [&](absl::string_view policy, absl::string_view reason, int64_t count) {
    std::vector<MetricLabel> all = labels;
    all.push_back({"policy", policy});
    all.push_back({"reason", reason});
    family.Sample(all, count);
  };
  // Only for a policy in shadow mode, or that has made shadow decisions:
  // an enforcing channel's scrape stays as it was.
  breaker = breaker && (this->breaker() == EnforcementMode::kShadow || breaker_total() > 0);
  bulkhead = bulkhead && (this->bulkhead() == EnforcementMode::kShadow || bulkhead_total() > 0);
  if (breaker) {
    for (size_t i = 1; i < kShadowBreakerReasons; ++i) {  // kNone is no rejection
      const auto reason = static_cast<RejectReason>(i);
      sample("breaker", ShadowBreakerReasonLabel(reason), breaker_count(reason));
    }
  }
  if (bulkhead) {
    for (size_t i = 0; i < kShadowBulkheadReasons; ++i) {
      const auto reason = static_cast<ShadowBulkheadReason>(i);
      sample("bulkhead", ShadowBulkheadReasonName(reason), bulkhead_count(reason));
    }
  }
}

bool MethodEnforcement::set_by_operator(EnforcedPolicy policy) const {
  MutexLock lock(&mu_);
  return by_operator_[Index(policy)];
}

std::optional<EnforcementMode> MethodEnforcement::ApplyFile(EnforcedPolicy policy,
                                                            EnforcementMode file) {
  const size_t i = Index(policy);
  MutexLock lock(&mu_);
  if (file_[i] == file) return std::nullopt;  // unchanged: an operator's mode stays
  file_[i] = file;
  by_operator_[i] = false;
  const EnforcementMode before = Load(i);
  if (before == file) return std::nullopt;
  modes_[i].store(static_cast<int>(file), std::memory_order_relaxed);
  return before;
}

EnforcementMode MethodEnforcement::Set(EnforcedPolicy policy, EnforcementMode mode) {
  const size_t i = Index(policy);
  MutexLock lock(&mu_);
  by_operator_[i] = true;
  const EnforcementMode before = Load(i);
  modes_[i].store(static_cast<int>(mode), std::memory_order_relaxed);
  return before;
}

void MethodEnforcement::Bind(std::shared_ptr<ResilienceEvents> events, absl::string_view channel,
                             absl::string_view method) {
  MutexLock lock(&mu_);
  events_ = std::move(events);
  channel_ = std::string(channel);
  method_ = std::string(method);
}

void MethodEnforcement::CountBreaker(RejectReason reason, absl::Time now) {
  breaker_counts_[static_cast<size_t>(reason) % kShadowBreakerReasons].fetch_add(
      1, std::memory_order_relaxed);
  totals_[0].fetch_add(1, std::memory_order_relaxed);
  MaybeReport(0, ShadowBreakerReasonLabel(reason), now);
}

void MethodEnforcement::CountBulkhead(ShadowBulkheadReason reason, absl::Time now) {
  bulkhead_counts_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  totals_[1].fetch_add(1, std::memory_order_relaxed);
  MaybeReport(1, ShadowBulkheadReasonName(reason), now);
}

void MethodEnforcement::MaybeReport(size_t i, absl::string_view reason, absl::Time now) {
  // The common case: a report was made less than an interval ago.
  const int64_t now_ns = absl::ToUnixNanos(now);
  if (now_ns < next_report_ns_[i].load(std::memory_order_relaxed)) return;
  ShadowDecisionEvent event;
  std::shared_ptr<ResilienceEvents> events;
  {
    MutexLock lock(&mu_);
    if (now_ns < next_report_ns_[i].load(std::memory_order_relaxed)) return;  // raced
    next_report_ns_[i].store(absl::ToUnixNanos(now + kShadowReportInterval),
                             std::memory_order_relaxed);
    events = events_;
    if (events == nullptr) return;
    const int64_t total = totals_[i].load(std::memory_order_relaxed);
    event.component = "channel " + channel_;
    event.method = method_;
    event.policy = i == 0 ? EnforcedPolicy::kBreaker : EnforcedPolicy::kBulkhead;
    event.would_have_rejected = total - reported_[i];
    event.total = total;
    event.since = reported_[i] == 0 ? now : reported_at_[i];
    event.at = now;
    event.last_reason = std::string(reason);
    reported_[i] = total;
    reported_at_[i] = now;
  }
  BreakerEventQueue::PostToEventsThread(
      [events = std::move(events), event = std::move(event)] { events->OnShadowDecisions(event); });
}

}  // namespace resilience
