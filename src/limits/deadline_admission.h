// File: src/limits/deadline_admission.h
//
// Deadline-aware admission (throttle.deadlineAdmission): a call whose
// remaining deadline at arrival is shorter than a recent percentile of its
// method's service time is refused before it runs, at most a bounded share
// of the arrivals over a window. No gRPC: the server's throttle passes the
// times.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_DEADLINE_ADMISSION_H_
#define GRPC_RESILIENCE_SRC_LIMITS_DEADLINE_ADMISSION_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/breaker/rolling_window.h"
#include "src/core/mutex.h"
#include "src/retry/latency_quantile.h"

namespace resilience {

// DeadlineAdmission
//
// Service times: the handler run time of the method's served calls (the
// caller Record()s each), kept in a LatencyQuantile: the last 1,000 to 2,000
// of them, in buckets at most 19% wide, a percentile reported as its
// bucket's upper bound (so the figure is never below the true percentile,
// and at most 19% above it: a call refused is one that the percentile says
// cannot finish in time).
//
// Decide(), at a call's arrival: once the method has `min_samples` service
// times, a call whose remaining deadline is below their `percentile` is
// refused, unless the refusals over the last `window` (a RollingWindow of
// kBuckets buckets: refused and admitted arrivals) would then exceed
// `max_share` of that window's arrivals, the refused one included (as
// Finagle's DeadlineFilter caps its refusals at 20% per 10 s): such a call
// is admitted and counted as capped. A call without a deadline is never
// refused. The share is checked and the refusal counted under one lock, so
// the cap holds under any concurrency (an arrival still being counted by
// another thread only makes it stricter).
//
// Locking: Decide() takes the quantile's short lock for a call with a
// deadline once the method has enough samples, and `mu_` only to refuse;
// Record() the quantile's lock. This class is thread-safe.
class DeadlineAdmission {
 public:
  // The policy's throttle.deadlineAdmission (docs/policy-reference.md).
  struct Options {
    // Which service-time percentile a call's remaining deadline must reach,
    // as a fraction in [0.5, 1].
    double percentile = 0.9;
    // The most refusals this way, as a share of the window's arrivals, in
    // (0, 1].
    double max_share = 0.2;
    // The window of that share: [100ms, 1h], whole multiples of 10ms.
    absl::Duration window = absl::Seconds(10);
    // No refusal before the method has this many service times, in
    // [1, LatencyQuantile::kGeneration].
    int64_t min_samples = LatencyQuantile::kMinSamples;

    bool operator==(const Options& o) const {
      return percentile == o.percentile && max_share == o.max_share && window == o.window &&
             min_samples == o.min_samples;
    }
  };

  // The RollingWindow's buckets over `window`.
  static constexpr int kBuckets = 10;

  // Validate()
  //
  // OK, or InvalidArgument naming `path` + ".<field>" (the JSON name) and the
  // value.
  static absl::Status Validate(const Options& options, absl::string_view path);

  // `options` must pass Validate().
  explicit DeadlineAdmission(const Options& options);
  DeadlineAdmission(const DeadlineAdmission&) = delete;
  DeadlineAdmission& operator=(const DeadlineAdmission&) = delete;

  // What Decide() found.
  struct Decision {
    bool refuse = false;
    // The service-time percentile the deadline was compared with; nullopt
    // while the method has fewer than min_samples service times.
    std::optional<absl::Duration> service_time;
    // Below the percentile but admitted, the share being reached.
    bool capped = false;
  };

  // Decide()
  //
  // A call arrives at `now` (monotonic, Clock::Now()) with `remaining` time
  // to its deadline (InfiniteDuration(): none). Counts the arrival.
  Decision Decide(absl::Duration remaining, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Record()
  //
  // A served call's handler ran for `service_time`.
  void Record(absl::Duration service_time) { service_times_.Record(service_time); }

  // The service-time percentile now (nullopt below min_samples).
  std::optional<absl::Duration> ServiceTime() const;

  const Options& options() const { return options_; }
  // Calls below the percentile admitted because of the cap, since creation.
  int64_t capped() const { return capped_.load(std::memory_order_relaxed); }

 private:
  const Options options_;
  LatencyQuantile service_times_;
  // Arrivals of the window: kSuccess admitted, kRejected refused.
  RollingWindow arrivals_;
  // Serializes a refusal's check of the share with its count.
  Mutex mu_;
  std::atomic<int64_t> capped_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_DEADLINE_ADMISSION_H_
