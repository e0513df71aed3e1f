// File: src/retry/windowed_retry_budget.h
//
// A retry budget that scales with the client's own recent calls (Finagle's
// RetryBudget): each call deposits `token_ratio` tokens, each retry or hedge
// withdraws one, and both expire after `ttl`. Unlike gRPC's token bucket
// (RetryBudget), whose burst of maxTokens / 2 retries is the same for a
// client making one call a second as for one making a thousand, the retries
// it allows over any `ttl` are at most token_ratio x the calls made in it,
// so a fleet of many low-rate clients cannot multiply its load by more than
// 1 + token_ratio (docs/fleet.md, "Amplification").

#ifndef GRPC_RESILIENCE_SRC_RETRY_WINDOWED_RETRY_BUDGET_H_
#define GRPC_RESILIENCE_SRC_RETRY_WINDOWED_RETRY_BUDGET_H_

#include <array>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// WindowedRetryBudget
//
// The algorithm: time is cut into kBuckets periods of ttl / kBuckets each;
// the balance is the sum over the last kBuckets periods (the current one
// included) of deposits minus withdrawals, in integer milli-tokens.
//   - RecordCall(): a call deposits token_ratio (every call, whatever its
//     outcome: the budget is a fraction of the traffic, not of the
//     successes).
//   - TryWithdraw(): a retry or a hedge takes 1 token, and is allowed, only
//     while the balance holds at least 1.
//   - A budget starts with `initial_tokens`, deposited at its creation and
//     expiring `ttl` later like any deposit: a new channel can retry its
//     first failures before its own calls have funded any, a long-lived one
//     is bounded by token_ratio alone.
//   - `min_retries_per_second` x ttl tokens are always there on top of the
//     balance (Finagle's minRetriesPerSec; default 0): a floor of retries
//     for a client too slow to fund its own.
// Withdrawals expire too (a retry spent this window does not count against
// the next one), so over every window of `ttl` the retries are at most
// token_ratio x the calls of that window + min_retries_per_second x ttl
// (+ initial_tokens in the first `ttl`); a window of W >= ttl allows at
// most ceil(W / ttl) times that.
//
// Locking: one Mutex, held for a few additions (and, once per bucket
// period, clearing the expired buckets). Withdrawals are exact: two
// retries cannot spend the same token. The clock is read once per
// operation, outside the lock. Cost, under callgrind with the real clock:
// a successful call's RetryDecider::Decide() takes 276 instructions with
// this budget and the channel's throttle against 77 with a bucket
// retryBudget (about 200 more: the clock read and its conversions, the
// lock), some 0.2 % of the client chain's ~104k per call. This class is
// thread-safe.
class WindowedRetryBudget {
 public:
  // Buckets of the window: a deposit lives between 0.9 ttl and ttl.
  static constexpr int kBuckets = 10;
  // Largest initial_tokens Validate() accepts (RetryBudget's kMaxTokens).
  static constexpr int kMaxInitialTokens = 1000;
  // Largest min_retries_per_second Validate() accepts.
  static constexpr double kMaxMinRetriesPerSecond = 1000;

  // Our retryBudget's fields with `ttl` (docs/policy-reference.md).
  struct Options {
    // Tokens each call deposits. In (0, 1]; kept to three decimals (at
    // least 0.001), as RetryBudget's.
    double token_ratio = 0.1;
    // How long a deposit or a withdrawal counts. In [1s, 60s].
    absl::Duration ttl = absl::Seconds(10);
    // Tokens at creation, expiring after `ttl`. In [0, kMaxInitialTokens].
    int initial_tokens = 5;
    // Retries a second allowed whatever the calls. In [0,
    // kMaxMinRetriesPerSecond].
    double min_retries_per_second = 0;

    bool operator==(const Options& o) const {
      return token_ratio == o.token_ratio && ttl == o.ttl && initial_tokens == o.initial_tokens &&
             min_retries_per_second == o.min_retries_per_second;
    }
  };

  // Validate()
  //
  // OK when the options are in range; otherwise InvalidArgument naming the
  // field and the value, e.g. "retry_budget.ttl: must be in [1s, 1m], got
  // 0". NaN fails.
  static absl::Status Validate(const Options& options);

  // Options Validate() refuses are clamped into its ranges (NaN ratio to
  // the smallest). `clock` (monotonic Now()) must outlive the budget.
  WindowedRetryBudget(const Options& options, Clock& clock);

  WindowedRetryBudget(const WindowedRetryBudget&) = delete;
  WindowedRetryBudget& operator=(const WindowedRetryBudget&) = delete;

  // RecordCall()
  //
  // A call was made: deposits token_ratio.
  void RecordCall() ABSL_LOCKS_EXCLUDED(mu_);

  // AllowRetry()
  //
  // Whether the balance holds a token (what TryWithdraw() would take).
  bool AllowRetry() ABSL_LOCKS_EXCLUDED(mu_);

  // TryWithdraw()
  //
  // Takes one token for a retry or a hedge about to be sent: true, and
  // taken, when the balance held at least 1; false and nothing taken
  // otherwise.
  bool TryWithdraw() ABSL_LOCKS_EXCLUDED(mu_);

  // The balance now, in tokens (the reserve of min_retries_per_second
  // included): below 0 while withdrawals outlive the deposits that paid for
  // them (no retry goes until those expire too).
  double tokens() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The bucket period of `now`, counted from the budget's creation.
  int64_t PeriodOf(absl::Time now) const;
  // Brings the ring up to `period`, clearing (and taking out of the
  // balance) the buckets that expired; an older `period` is the current one.
  void Advance(int64_t period) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Add(int64_t milli) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  const absl::Time origin_;
  const int64_t bucket_ns_;
  const int64_t ratio_milli_;
  // min_retries_per_second x ttl, milli-tokens, always on top of balance_.
  const int64_t reserve_milli_;
  Mutex mu_;
  // Newest period the ring holds; slot period % kBuckets.
  int64_t period_ ABSL_GUARDED_BY(mu_) = 0;
  // Deposits minus withdrawals of each live period, milli-tokens.
  std::array<int64_t, kBuckets> net_ ABSL_GUARDED_BY(mu_){};
  // The sum of net_.
  int64_t balance_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_WINDOWED_RETRY_BUDGET_H_
