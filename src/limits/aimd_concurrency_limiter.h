// File: src/limits/aimd_concurrency_limiter.h
//
// A concurrency limit driven by drops, as TCP's congestion window: additive
// increase while calls succeed, multiplicative decrease when they fail or
// time out. docs/adaptive-concurrency.md compares it with the gradient
// limit.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_AIMD_CONCURRENCY_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_AIMD_CONCURRENCY_LIMITER_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/limits/adaptive_concurrency_limiter.h"

namespace resilience {

// AimdConcurrencyLimiter
//
// After each window: if it saw a drop (a Release() with Outcome::kFailure,
// e.g. a call that ended past its deadline, or a latency >= `timeout`), the
// limit is multiplied by backoff_ratio; otherwise, if at least half of the
// limit was in flight during the window, it grows by one. Clamped to
// [min_limit, max_limit]. Starts at initial_limit. This class is
// thread-safe.
class AimdConcurrencyLimiter final : public AdaptiveConcurrencyLimiter {
 public:
  struct Options : AdaptiveConcurrencyLimiter::Options {
    // Factor applied on a window with drops. In [0.1, 1).
    double backoff_ratio = 0.9;
    // A call at least this slow counts as a drop. In (0, 30 days].
    absl::Duration timeout = absl::Seconds(5);
  };

  static constexpr absl::Duration kMaxTimeout = absl::Hours(24 * 30);

  // Validate()
  //
  // OK when Create() would accept `options`; otherwise InvalidArgument
  // naming the field and the value.
  static absl::Status Validate(const Options& options);

  // Create()
  //
  // A limiter for options Validate() accepts; its error otherwise. `clock`
  // must outlive it.
  static absl::StatusOr<std::unique_ptr<AimdConcurrencyLimiter>> Create(const Options& options,
                                                                       Clock& clock);

 private:
  AimdConcurrencyLimiter(const Options& options, Clock& clock);

  Decision OnWindow(const Window& window) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options aimd_options_;
  double estimate_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_AIMD_CONCURRENCY_LIMITER_H_
