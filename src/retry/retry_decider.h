// File: src/retry/retry_decider.h
//
// Whether, and after how long, a failed attempt of a call is retried: the
// whole retry policy, free of gRPC; the caller passes the time (only a
// windowed retry budget reads the Clock it is given), so that every exit is
// a unit test on simulated time.

#ifndef GRPC_RESILIENCE_SRC_RETRY_RETRY_DECIDER_H_
#define GRPC_RESILIENCE_SRC_RETRY_RETRY_DECIDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/random_source.h"
#include "src/retry/backoff.h"
#include "src/core/clock.h"
#include "src/retry/retry_budget.h"
#include "src/retry/windowed_retry_budget.h"

namespace resilience {

// Pushback
//
// A server's grpc-retry-pushback-ms, parsed (gRFC A6): absent, a delay, or
// "do not retry" (a negative or malformed value).
struct Pushback {
  enum class Kind { kNone, kDelay, kStop };
  Kind kind = Kind::kNone;
  absl::Duration delay;  // kDelay only

  // Parse() takes the trailer's value: decimal milliseconds >= 0.
  static Pushback Parse(absl::string_view value);
};

// AttemptOutcome
//
// How one attempt ended, in the terms the retry policy needs.
struct AttemptOutcome {
  absl::StatusCode code = absl::StatusCode::kOk;
  // A breaker of ours refused to send the attempt.
  bool rejected_locally = false;
  // The caller cancelled the call.
  bool cancelled = false;
  // The attempt's own deadline has passed (its code is DEADLINE_EXCEEDED
  // because of it, not because a server said so).
  bool deadline_passed = false;
  // That deadline was the per-attempt timeout, earlier than the call's own
  // deadline: the attempt timed out, the call did not.
  bool per_attempt_deadline = false;
  // It failed on an endpoint that fails alone (per-endpoint breakers,
  // EndpointBreakers::FailingAlone(): its breaker open, or its last
  // outcomes failures, while another endpoint of the method serves): a
  // retry goes to another endpoint, so the method's retryBudget neither
  // pays for the failure nor refuses the retry (a whole-service failure is
  // never such a failure, and still spends the budget). The channel's
  // retryThrottling keeps gRPC's meaning (charged, and asked), and so does
  // a windowed retryBudget (a bound of retries per call).
  bool endpoint_known_bad = false;
  // Attempts of the call so far, this one included, that do not count
  // toward maxAttempts: failures on a known-bad endpoint that gRPC's load
  // balancer picked, a pick the library would have refused (the call
  // counts them, RetriedUnaryCall::kMaxRepicks at most). 0 without.
  int repicks = 0;
  Pushback pushback;
};

// RetryVerdict: what the call does next, and why.
enum class RetryVerdict {
  kSucceeded,          // the attempt succeeded: the call is done
  kRetry,              // retry after RetryDecision::delay
  kCallDeadline,       // the call's deadline passed
  kCancelled,          // the caller cancelled
  kRejectedLocally,    // our breaker refused: retrying would only add load
  kNotRetryable,       // the code is not in retryableStatusCodes
  kAttemptsExhausted,  // maxAttempts reached
  kPushbackStop,       // the server's pushback says not to retry
  kBudgetSpent,        // the retry budget (retryThrottling) is spent
  kBackoffPastDeadline,  // the backoff would end at or after the deadline
};

struct RetryDecision {
  RetryVerdict verdict = RetryVerdict::kSucceeded;
  // kRetry and kBackoffPastDeadline: the wait before the next attempt (the
  // server's pushback when it gave one, else the backoff).
  absl::Duration delay;
  // The attempt ran into its per-attempt timeout: whatever the verdict, the
  // call reports that, not a bare DEADLINE_EXCEEDED.
  bool attempt_timed_out = false;
};

// RetryDecider
//
// The retry policy of one method on one channel (gRPC's retryPolicy, plus
// our perAttemptTimeout accounting), with up to two token buckets
// (RetryBudget) that stop retries while too many calls fail:
//   - the method's own budget (our `retryBudget`), owned here and shared by
//     every call of the method: a retryable failure costs it a token;
//   - the channel's throttle (gRPC's retryThrottling, gRFC A6), shared with
//     every other method of the channel and fed by their calls too: a
//     retryable failure or any attempt that got a pushback costs it a token.
// A success gives each back its token ratio; a retry needs both to allow
// it. Decide() updates them. The method's budget may instead be a
// WindowedRetryBudget (our `retryBudget` with a `ttl`): the first attempt of
// every call deposits its ratio, every retry withdraws a token, whatever the
// failure was (an endpoint_known_bad failure too: the bound of retries per
// call is what that budget is for).
//
// Algorithm (in this order, the first that applies wins):
//   1. OK: a success for the budget and the throttle; done.
//   2. The attempt's deadline passed and it was the call's: done.
//   3. A failure that reached the server costs the budget a token when it
//      is retryable and not endpoint_known_bad, the throttle one when it is
//      retryable or carries a pushback (a local rejection costs nothing: it
//      never reached the server).
//   4. Cancelled, rejected locally, not retryable, or maxAttempts reached
//      (the attempts made less AttemptOutcome::repicks): done.
//   5. A "do not retry" pushback: done. A pushback delay replaces the
//      backoff; after an endpoint_known_bad failure the retry goes at once
//      (no backoff: another endpoint serves).
//   6. The budget or the throttle allows no retry: done. (The bucket
//      budget is not asked after an endpoint_known_bad failure.)
//   7. The delay would end at or after the call's deadline: done (waiting
//      could only end in DEADLINE_EXCEEDED).
//   8. Retry after the delay (a windowed budget's token is taken here; if
//      another call took the last one meanwhile: done, as in 6).
//
// Thread-safety: Decide() may run concurrently for different calls (the
// budgets are atomic, the backoff draws from a thread-safe RandomSource).
class RetryDecider {
 public:
  // Without settings, nothing is retried. The policy file's defaults are
  // RetrySettings' (src/policy/method_policy.h), Backoff's and
  // RetryBudget's.
  struct Options {
    int max_attempts = 1;  // 1 (or less) means never retry
    std::vector<absl::StatusCode> retryable_codes;
    Backoff::Options backoff;
    // The method's own budget; none: only the throttle (if any) limits.
    std::optional<RetryBudget::Options> budget;
    // The method's own budget when it has a ttl (then `budget` is unset;
    // with both, this one is used).
    std::optional<WindowedRetryBudget::Options> windowed_budget;
    // The windowed budget's clock; null: Clock::Real(). Must outlive the
    // decider.
    Clock* clock = nullptr;
    // The channel's retryThrottling, shared by all its methods; null: none.
    // Must outlive the decider.
    RetryBudget* throttle = nullptr;
  };

  // `random` must outlive the decider.
  RetryDecider(const Options& options, RandomSource& random);

  // Decide()
  //
  // `attempts` is how many attempts the call has made, this one included
  // (>= 1); `now` the time the attempt ended; `call_deadline` the call's
  // deadline (absl::InfiniteFuture() when it has none). Both are wall-clock
  // times (Clock::WallNow()), because gRPC's deadlines are: `now` is only
  // compared with the deadline, never used to measure a duration.
  RetryDecision Decide(int attempts, const AttemptOutcome& outcome, absl::Time now,
                       absl::Time call_deadline) const;

  bool IsRetryable(absl::StatusCode code) const;
  int max_attempts() const { return max_attempts_; }
  // The method's budget and the channel's throttle; null when not set.
  const RetryBudget* budget() const { return budget_.has_value() ? &*budget_ : nullptr; }
  const RetryBudget* throttle() const { return throttle_; }
  // The method's windowed budget; null when it has none.
  WindowedRetryBudget* windowed_budget() const { return windowed_.get(); }

 private:
  const int max_attempts_;
  uint32_t retryable_mask_ = 0;  // bit c: code c is retryable
  const Backoff backoff_;
  mutable std::optional<RetryBudget> budget_;
  const std::unique_ptr<WindowedRetryBudget> windowed_;
  RetryBudget* const throttle_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_RETRY_DECIDER_H_
