// File: src/retry/backoff.h
//
// Exponential backoff with jitter for retries (gRPC's retry design, A6).

#ifndef GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_
#define GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_

#include <algorithm>
#include <cmath>

#include "absl/time/time.h"
#include "grpc_resilience/internal/core/random_source.h"

namespace resilience {

// Backoff
//
// The delay before retry n (n = 1 for the first retry) is
//   base(n) = min(initial * multiplier^(n-1), max)
// multiplied by a uniform draw in [1 - jitter, 1 + jitter] ("proportional"
// jitter, the default), or, with full jitter, a uniform draw in [0, base(n)]
// (AWS's "full jitter"). Clock-free: it returns durations, like gRPC's
// BackOff::NextAttemptDelay(). Stateless apart from its options, so one
// instance serves every call of a method. Thread-safe if `random` is.
class Backoff {
 public:
  // The policy loader gives initial and max in (0, 1h] with max >= initial,
  // a finite multiplier >= 1 and jitter in [0, 1] (docs/bounds.md).
  struct Options {
    absl::Duration initial = absl::Milliseconds(50);
    absl::Duration max = absl::Seconds(1);
    double multiplier = 2.0;
    double jitter = 0.2;
    bool full_jitter = false;
  };

  Backoff(const Options& options, RandomSource& random) : options_(options), random_(random) {}

  // Delay()
  //
  // The delay before retry `n` (>= 1). For any `n` it is in
  // [0, max * (1 + jitter)]: multiplier^(n-1) may overflow to infinity (and
  // 0 * infinity is NaN), which only means the cap applies.
  absl::Duration Delay(int n) const {
    const double exponent = n > 1 ? n - 1 : 0;  // n - 1 overflows at INT_MIN
    const double max_s = std::max(0.0, absl::ToDoubleSeconds(options_.max));
    double base_s =
        absl::ToDoubleSeconds(options_.initial) * std::pow(options_.multiplier, exponent);
    if (!(base_s <= max_s)) base_s = max_s;  // also NaN
    const double u = random_.NextUniform();
    const double factor =
        options_.full_jitter ? u : 1.0 - options_.jitter + 2.0 * options_.jitter * u;
    const double delay_s = base_s * factor;
    return delay_s > 0.0 ? absl::Seconds(delay_s) : absl::ZeroDuration();  // also NaN
  }

 private:
  const Options options_;
  RandomSource& random_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_
