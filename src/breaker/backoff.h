// File: src/breaker/backoff.h
//
// Exponential backoff with jitter for retries (gRPC's retry design, A6).

#ifndef GRPC_RESILIENCE_SRC_BREAKER_BACKOFF_H_
#define GRPC_RESILIENCE_SRC_BREAKER_BACKOFF_H_

#include <algorithm>
#include <cmath>

#include "absl/time/time.h"
#include "src/breaker/random_source.h"

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
  // The delay before retry `n` (>= 1).
  absl::Duration Delay(int n) const {
    const double exponent = std::max(0, n - 1);
    const double base_s = std::min(absl::ToDoubleSeconds(options_.initial) *
                                       std::pow(options_.multiplier, exponent),
                                   absl::ToDoubleSeconds(options_.max));
    const double u = random_.NextUniform();
    const double factor =
        options_.full_jitter ? u : 1.0 - options_.jitter + 2.0 * options_.jitter * u;
    return absl::Seconds(base_s * factor);
  }

 private:
  const Options options_;
  RandomSource& random_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_BACKOFF_H_
