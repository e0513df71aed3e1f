// File: src/retry/backoff.h
//
// Exponential backoff with jitter for retries (gRPC's retry design, A6).

#ifndef GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_
#define GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/random_source.h"

namespace resilience {

// Backoff
//
// The delay before retry n (n = 1 for the first retry) is
//   base(n) = min(initial_backoff * backoff_multiplier^(n-1), max_backoff)
// multiplied by a uniform draw in [1 - jitter, 1 + jitter] ("proportional"
// jitter, the default), or, with full jitter, a uniform draw in [0, base(n)]
// (AWS's "full jitter"). Clock-free: it returns durations, like gRPC's
// BackOff::NextAttemptDelay(). Stateless apart from its options, so one
// instance serves every call of a method. Thread-safe if `random` is.
class Backoff {
 public:
  // Longest initial_backoff and max_backoff Validate() accepts: a longer
  // wait between attempts is an outage, not a backoff, and every delay stays
  // far from what absl::Duration arithmetic can overflow.
  static constexpr absl::Duration kMaxBackoff = absl::Hours(1);

  // The settings of gRPC's retryPolicy that shape the backoff, under gRPC's
  // names. The defaults written here are the library's only ones: the policy
  // file's retryPolicy (RetrySettings) and the retry decider take theirs
  // from this struct.
  struct Options {
    // The base delay before the first retry. In (0, kMaxBackoff].
    absl::Duration initial_backoff = absl::Milliseconds(50);
    // The cap of the base delay. In (0, kMaxBackoff], >= initial_backoff.
    absl::Duration max_backoff = absl::Seconds(1);
    // Growth of the base delay per retry. Finite, >= 1.
    double backoff_multiplier = 2.0;
    // Proportional jitter: each delay is the base times a uniform draw in
    // [1 - jitter, 1 + jitter]. In [0, 1].
    double jitter = 0.2;
    // Full jitter instead: each delay is a uniform draw in [0, base]
    // (`jitter` is then ignored).
    bool full_jitter = false;
  };

  // Validate()
  //
  // OK when Create() would accept `options`; otherwise InvalidArgument
  // naming the field and the value, e.g. "backoff.max_backoff: must be >=
  // initial_backoff (2s), got 1s". Fields are checked in declaration order;
  // the first error wins. NaN fails every check.
  static absl::Status Validate(const Options& options);

  // Create()
  //
  // A backoff for options Validate() accepts; its error otherwise. `random`
  // must outlive the backoff.
  static absl::StatusOr<Backoff> Create(const Options& options, RandomSource& random);

  // Builds a backoff without validation, for callers that validated the
  // options already (the policy loader does, through Validate()). Any
  // options are safe: Delay() stays in [0, max_backoff * (1 + jitter)].
  // `random` must outlive the backoff.
  Backoff(const Options& options, RandomSource& random) : options_(options), random_(random) {}

  // Delay()
  //
  // The delay before retry `n` (>= 1). For any `n` it is in
  // [0, max_backoff * (1 + jitter)]: backoff_multiplier^(n-1) may overflow to
  // infinity (and 0 * infinity is NaN), which only means the cap applies.
  absl::Duration Delay(int n) const {
    const double exponent = n > 1 ? n - 1 : 0;  // n - 1 overflows at INT_MIN
    const double max_s = std::max(0.0, absl::ToDoubleSeconds(options_.max_backoff));
    double base_s = absl::ToDoubleSeconds(options_.initial_backoff) *
                    std::pow(options_.backoff_multiplier, exponent);
    if (!(base_s <= max_s)) base_s = max_s;  // also NaN
    const double u = random_.NextUniform();
    const double factor =
        options_.full_jitter ? u : 1.0 - options_.jitter + 2.0 * options_.jitter * u;
    const double delay_s = base_s * factor;
    return delay_s > 0.0 ? absl::Seconds(delay_s) : absl::ZeroDuration();  // also NaN
  }

  const Options& options() const { return options_; }

 private:
  const Options options_;
  RandomSource& random_;
};

inline absl::Status Backoff::Validate(const Options& o) {
  const auto in_range = [](absl::string_view field, absl::Duration value) {
    if (value > absl::ZeroDuration() && value <= kMaxBackoff) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("backoff.", field, ": must be in (",
                                                   absl::FormatDuration(absl::ZeroDuration()),
                                                   ", ", absl::FormatDuration(kMaxBackoff),
                                                   "], got ", absl::FormatDuration(value)));
  };
  if (absl::Status s = in_range("initial_backoff", o.initial_backoff); !s.ok()) return s;
  if (absl::Status s = in_range("max_backoff", o.max_backoff); !s.ok()) return s;
  if (o.max_backoff < o.initial_backoff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "backoff.max_backoff: must be >= initial_backoff (",
        absl::FormatDuration(o.initial_backoff), "), got ", absl::FormatDuration(o.max_backoff)));
  }
  // The numeric checks are written so that NaN fails them.
  if (!(o.backoff_multiplier >= 1.0) || !std::isfinite(o.backoff_multiplier)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backoff.backoff_multiplier: must be >= 1, got ", o.backoff_multiplier));
  }
  if (!(o.jitter >= 0.0 && o.jitter <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backoff.jitter: must be in [0, 1], got ", o.jitter));
  }
  return absl::OkStatus();
}

inline absl::StatusOr<Backoff> Backoff::Create(const Options& options, RandomSource& random) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return Backoff(options, random);
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_BACKOFF_H_
