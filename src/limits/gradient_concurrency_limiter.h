// File: src/limits/gradient_concurrency_limiter.h
//
// A concurrency limit that follows latency: it grows while calls take about
// as long as when the server is idle (the baseline), and shrinks as they take
// longer, because then calls queue. Our own design in the family of Envoy's
// adaptive concurrency filter and Netflix's Gradient2; docs/
// adaptive-concurrency.md explains it and its defaults.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_GRADIENT_CONCURRENCY_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_GRADIENT_CONCURRENCY_LIMITER_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/random_source.h"
#include "src/limits/adaptive_concurrency_limiter.h"

namespace resilience {

// GradientConcurrencyLimiter
//
// Latency is summed up by the median of a window's calls, a statistic that
// queueing moves (every call waits) but a fixed mixture of fast and slow
// calls does not (a cache's hits and misses: a window's mean jumps with the
// few slow calls it happens to hold). The baseline is the same statistic of
// calls run at min_limit concurrency: measured first when the limiter
// starts, again every baseline_interval (the limit is pinned to min_limit
// until baseline_samples calls admitted under the pin have been answered,
// then restored; a measurement is given up, the limit restored, once
// 5 x baseline_samples calls under the pin went unanswered instead), and
// lowered when the recent windows' medians, smoothed, are lower. Before
// the first baseline, the limit stays where it is. Between measurements, after each window:
//
//   gradient = clamp(baseline * (1 + tolerance) / window median, 0.5, 2)
//   target   = limit * gradient + sqrt(limit)
//   limit    = (1 - smoothing) * limit + smoothing * target
//
// clamped to [min_limit, max_limit]. sqrt(limit) is the headroom that keeps
// a few calls queued, so that a backend that got faster is noticed. The
// limit grows only after a window in which it was reached (below it, the
// load, not the backend, limits the calls: a limit grown unused would let the
// next burst through unchecked).
//
// Steady state behind a backend of N workers: the limit settles near
// (1 + tolerance) * N + sqrt(limit), calls take about limit / N times the
// baseline. This class is thread-safe.
class GradientConcurrencyLimiter final : public AdaptiveConcurrencyLimiter {
 public:
  struct Options : AdaptiveConcurrencyLimiter::Options {
    // How much slower than the baseline a window may be before the limit
    // shrinks. In [0, 10].
    double tolerance = 0.25;
    // Weight of each window's target in the limit. In (0, 1].
    double smoothing = 0.7;
    // How often the baseline is measured again, on average: each interval
    // is drawn uniformly in [0.75, 1.25] x this, so that servers started
    // together drift apart instead of pinning their limits at the same
    // moments. In [sample_window, 1h].
    absl::Duration baseline_interval = absl::Seconds(10);
    // Calls a baseline measurement averages. In [1, 1e6].
    int64_t baseline_samples = 20;
  };

  // Validate()
  //
  // OK when Create() would accept `options`; otherwise InvalidArgument
  // naming the field and the value ("tolerance: must be in [0, 10], got -1").
  static absl::Status Validate(const Options& options);

  // Create()
  //
  // A limiter for options Validate() accepts; its error otherwise. `clock`
  // must outlive it.
  static absl::StatusOr<std::unique_ptr<GradientConcurrencyLimiter>> Create(const Options& options,
                                                                           Clock& clock);

  // The current baseline; InfiniteDuration() before the first measurement.
  absl::Duration baseline() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a baseline measurement is under way (the limit pinned).
  bool measuring() ABSL_LOCKS_EXCLUDED(mu_);
  // Measurements given up: 5 x baseline_samples calls under the pin went
  // unanswered (cancelled, or expired too soon) before baseline_samples
  // were answered.
  int64_t measurements_given_up() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  GradientConcurrencyLimiter(const Options& options, Clock& clock);

  Decision OnWindow(const Window& window) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pinned window of a baseline measurement starting at `now`.
  Decision StartMeasuring(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next pinned window of the measurement that began at pin_start_.
  Decision Pinned(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An ordinary window starting at `now`.
  Decision Normal(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next measurement, one jittered baseline_interval after `now`.
  void ScheduleMeasurement(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options gradient_options_;
  // The limit the controller works on (fractional); published rounded.
  double estimate_ ABSL_GUARDED_BY(mu_);
  absl::Duration baseline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  // The recent windows' medians, smoothed (see OnWindow()).
  absl::Duration recent_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  bool measuring_ ABSL_GUARDED_BY(mu_) = true;
  absl::Time pin_start_ ABSL_GUARDED_BY(mu_);
  absl::Time next_measurement_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int64_t measurements_given_up_ ABSL_GUARDED_BY(mu_) = 0;
  // Draws each interval until the next measurement; seeded with the time
  // the limiter was made, so servers started apart measure apart.
  SplitMixRandom jitter_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_GRADIENT_CONCURRENCY_LIMITER_H_
