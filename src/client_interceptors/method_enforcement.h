// File: src/client_interceptors/method_enforcement.h
//
// The enforcement modes of one method's client policies on one channel
// (its breaker with its endpoint breakers, its bulkhead), switched at run
// time, and its shadow decisions: counted by reason and reported to the
// events listener at most once per kShadowReportInterval
// (docs/shadow-mode.md).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METHOD_ENFORCEMENT_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METHOD_ENFORCEMENT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/resilience_events.h"
#include "src/breaker/breaker.h"
#include "src/core/mutex.h"
#include "src/metrics/metric_catalog.h"

namespace resilience {

// Why a shadow bulkhead would have rejected a call.
enum class ShadowBulkheadReason { kQueueFull, kNoTimeToWait, kWaitExpired };
inline constexpr size_t kShadowBulkheadReasons = 3;
inline constexpr size_t kShadowBreakerReasons = 7;  // RejectReason's values
// "queue_full", "no_time_to_wait", "wait_expired".
absl::string_view ShadowBulkheadReasonName(ShadowBulkheadReason reason);
// The metric's label of a breaker's reason: "open", "half_open_probe_limit",
// "half_open_probe_interval", "awaiting_connection", "forced_open",
// "dropped".
absl::string_view ShadowBreakerReasonLabel(RejectReason reason);

// A shadow policy reports what it would have rejected at most this often.
inline constexpr absl::Duration kShadowReportInterval = absl::Seconds(10);

// MethodEnforcement
//
// Kept across policy updates (it lives in the method's ClientMethodTally).
// Who sets a mode: the policy file, when it first gives the method its
// policy or an Update() changes the policy's `enforcement`
// (ApplyFile()), and an operator (Set(): ClientResilience::SetEnforcement(),
// the admin endpoint). The last change wins: an Update() that leaves
// `enforcement` as the previous file had it keeps the operator's mode.
// The modes are read on every call (relaxed atomic loads). Thread-safe.
class MethodEnforcement {
 public:
  // kBreaker and kBulkhead only (the client's policies).
  static bool Applies(EnforcedPolicy policy) {
    return policy == EnforcedPolicy::kBreaker || policy == EnforcedPolicy::kBulkhead;
  }

  EnforcementMode breaker() const { return Load(0); }
  EnforcementMode bulkhead() const { return Load(1); }
  EnforcementMode mode(EnforcedPolicy policy) const { return Load(Index(policy)); }
  // Whether an operator's Set() decides the mode now (not the file).
  bool set_by_operator(EnforcedPolicy policy) const ABSL_LOCKS_EXCLUDED(mu_);

  // ApplyFile()
  //
  // The policy file's mode of `policy`: applied when it differs from what
  // the file said before (or the file said nothing yet). Returns the mode it
  // replaced when it changed the mode.
  std::optional<EnforcementMode> ApplyFile(EnforcedPolicy policy, EnforcementMode file)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Set()
  //
  // An operator's mode for `policy`; returns the one it replaced.
  EnforcementMode Set(EnforcedPolicy policy, EnforcementMode mode) ABSL_LOCKS_EXCLUDED(mu_);

  // Where reports go: the channel's events listener (null: none), its name
  // and the method. Set when the method's state is made.
  void Bind(std::shared_ptr<ResilienceEvents> events, absl::string_view channel,
            absl::string_view method) ABSL_LOCKS_EXCLUDED(mu_);

  // A shadow decision of the breaker (`reason`) or the bulkhead, at `now`:
  // counted; the first one and then one per kShadowReportInterval are
  // reported to the listener on the library's events thread (never under
  // the caller's locks, never blocking), with the count since the last.
  void CountBreaker(RejectReason reason, absl::Time now);
  void CountBulkhead(ShadowBulkheadReason reason, absl::Time now);

  int64_t breaker_count(RejectReason reason) const {
    return breaker_counts_[static_cast<size_t>(reason) % kShadowBreakerReasons].load(
        std::memory_order_relaxed);
  }
  int64_t bulkhead_count(ShadowBulkheadReason reason) const {
    return bulkhead_counts_[static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }
  // Adds the shadow decisions' samples to `family`
  // (grpc_resilience_client_shadow_rejections_total), each with `labels`
  // and its policy and reason: the breaker's when `breaker` (the method
  // has one) and it is in shadow mode or has made shadow decisions, the
  // bulkhead's likewise.
  void AppendSamples(PrometheusText::Family& family, const std::vector<MetricLabel>& labels,
                     bool breaker, bool bulkhead) const;

  int64_t breaker_total() const { return totals_[0].load(std::memory_order_relaxed); }
  int64_t bulkhead_total() const { return totals_[1].load(std::memory_order_relaxed); }

 private:
  static size_t Index(EnforcedPolicy policy) { return policy == EnforcedPolicy::kBulkhead; }
  EnforcementMode Load(size_t i) const {
    return static_cast<EnforcementMode>(modes_[i].load(std::memory_order_relaxed));
  }
  // Reports policy `i`'s count when one is due at `now`.
  void MaybeReport(size_t i, absl::string_view reason, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  std::array<std::atomic<int>, 2> modes_{};  // EnforcementMode; kEnforce first
  std::array<std::atomic<int64_t>, kShadowBreakerReasons> breaker_counts_{};
  std::array<std::atomic<int64_t>, kShadowBulkheadReasons> bulkhead_counts_{};
  std::array<std::atomic<int64_t>, 2> totals_{};
  // When the next report is due (Unix ns); 0: at the next decision.
  std::array<std::atomic<int64_t>, 2> next_report_ns_{};
  mutable Mutex mu_;
  std::array<std::optional<EnforcementMode>, 2> file_ ABSL_GUARDED_BY(mu_);
  std::array<bool, 2> by_operator_ ABSL_GUARDED_BY(mu_) = {false, false};
  std::array<int64_t, 2> reported_ ABSL_GUARDED_BY(mu_) = {0, 0};
  std::array<absl::Time, 2> reported_at_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<ResilienceEvents> events_ ABSL_GUARDED_BY(mu_);
  std::string channel_ ABSL_GUARDED_BY(mu_);
  std::string method_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METHOD_ENFORCEMENT_H_
