// File: src/retry/hedging_decider.h
//
// gRPC's hedgingPolicy (gRFC A6) for one method: when a call sends its next
// hedged attempt, which attempt's end decides the call, and what hedges cost
// the retry budget. Free of gRPC and of any clock (the caller passes the
// time), so every path is a unit test on simulated time.

#ifndef GRPC_RESILIENCE_SRC_RETRY_HEDGING_DECIDER_H_
#define GRPC_RESILIENCE_SRC_RETRY_HEDGING_DECIDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/retry/latency_quantile.h"
#include "src/core/clock.h"
#include "src/retry/retry_budget.h"
#include "src/retry/retry_decider.h"
#include "src/retry/windowed_retry_budget.h"

namespace resilience {

// HedgeStep
//
// What a hedged call does after an event (HedgingDecider's Start(),
// OnTimer(), OnAttemptEnd()).
struct HedgeStep {
  // Send one more attempt now.
  bool send = false;
  // (Re)arm the call's hedging timer to fire after this long, replacing a
  // timer already armed; nullopt: leave the timer as it is.
  std::optional<absl::Duration> arm_timer;
  // Disarm the hedging timer (no more hedges by time).
  bool cancel_timer = false;
  // kRetry: the call goes on. Any other verdict: the call ends now with
  // the status of the attempt that just ended (rewritten for kCallDeadline,
  // kCancelled, kPushbackStop, kBudgetSpent as after a retry), and every
  // other attempt still in flight is cancelled.
  RetryVerdict verdict = RetryVerdict::kRetry;

  bool finished() const { return verdict != RetryVerdict::kRetry; }
};

// HedgingDecider
//
// The hedging policy of one method on one channel: hedgingPolicy's
// maxAttempts, hedgingDelay and nonFatalStatusCodes (gRFC A6), our
// adaptiveDelay, the method's retry budget (our retryBudget), which hedges
// spend like retries, and the channel's throttle (gRPC's retryThrottling,
// gRFC A6), shared with every method of the channel: no hedge goes while it
// holds maxTokens / 2 or fewer, a non-fatal failure or a pushback costs it a
// token, a success gives back its ratio. Per-call state is a
// HedgingDecider::Call that the caller keeps and passes in; the budget and
// the latency window are shared by every call of the method.
//
// A call:
//   - Start(): the first attempt is sent; the timer is armed for the
//     hedging delay when maxAttempts > 1.
//   - OnTimer(): the delay passed with no final answer: one more attempt
//     (a hedge) is sent if attempts are left, the throttle and the budget
//     let it and it costs the budget one token, as a failed attempt does;
//     the timer is re-armed for the next one. When no hedge goes (the budget refuses, or
//     the call's deadline passed) and nothing is in flight -- a pushback
//     postponed this hedge after the last attempt ended -- the call ends
//     now (kBudgetSpent, kCallDeadline) with the last attempt's status. (A6 charges only failures; a hedge that
//     wins against a slow attempt is no failure, so a backend that is slow
//     because it is overloaded would get every call twice. Charging each
//     timer hedge bounds hedges to the budget's token ratio per successful
//     call, however slow the backend is.)
//   - OnAttemptEnd(), in this order:
//       the call already ended: nothing (a cancelled loser);
//       OK: the budget and the throttle get their token ratio back; the
//         call ends with it;
//       the call's deadline passed, or the caller cancelled: the call ends;
//       a local breaker rejection: no more hedges (they would only add load
//         to a method the breaker holds off); the call ends when nothing else
//         is in flight;
//       a fatal code (not in nonFatalStatusCodes): the call ends with it
//         (a token of the throttle when it carried a pushback);
//       a non-fatal code that reached the server costs a token of each,
//       then:
//         pushback "stop": no more hedges;
//         attempts left and both allow: the next hedge is sent now
//           (a pushback delay instead postpones it by that delay), and the
//           timer restarts;
//         otherwise no more hedges;
//       with no more hedges and nothing in flight, the call ends with this
//       attempt's status (kAttemptsExhausted, kPushbackStop, kBudgetSpent).
// The first final answer wins: the caller cancels the other attempts, whose
// ends then change nothing (OnAttemptEnd() of an ended call).
// With a windowed budget (our retryBudget with a `ttl`) instead of the token
// bucket: Start() deposits the call's ratio, every hedge takes a token when
// it is sent (a failure costs nothing by itself), and a hedge goes only while
// the balance holds one.
//
// Thread-safety: one Call is used by one thread at a time (the caller's
// lock); the shared budget and latency window are thread-safe.
class HedgingDecider {
 public:
  // hedgingPolicy.adaptiveDelay: hedge at the method's observed attempt
  // latency percentile, never sooner than `floor`.
  struct AdaptiveDelay {
    double percentile = 95;  // in [50, 99.9]
    absl::Duration floor = absl::Milliseconds(1);
  };

  struct Options {
    // Attempts in total, the first included; clamped into [1, 5] (the
    // policy loader accepts 2..5 and clamps larger values with a warning).
    int max_attempts = 2;
    // gRPC's hedgingDelay; with adaptive_delay, the delay until the window
    // holds enough samples (LatencyQuantile::kMinSamples).
    absl::Duration delay = absl::ZeroDuration();
    std::vector<absl::StatusCode> non_fatal_codes;
    std::optional<AdaptiveDelay> adaptive_delay;
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

  // Largest max_attempts (gRPC's own cap).
  static constexpr int kMaxAttempts = 5;

  struct Call {
    int sent = 0;       // attempts started, a locally rejected one included
    int in_flight = 0;  // sent and not ended
    bool ended = false;
    // No more hedges; why (kPushbackStop, kBudgetSpent, kRejectedLocally).
    std::optional<RetryVerdict> stopped;
    // The armed timer stands for a hedge a non-fatal failure already paid
    // for (a pushback delay postponed it): it costs no second token.
    bool paid = false;
  };

  explicit HedgingDecider(const Options& options);

  // The first attempt: always sent.
  HedgeStep Start(Call& call) const;
  // The hedging timer fired at `now`. As for RetryDecider::Decide(), `now`
  // and `call_deadline` are wall-clock times (Clock::WallNow()), only ever
  // compared with each other.
  HedgeStep OnTimer(Call& call, absl::Time now, absl::Time call_deadline) const;
  // An attempt of `call` ended at `now` (AttemptOutcome as for retries;
  // `per_attempt_deadline` is never set, hedges have no per-attempt
  // timeout).
  HedgeStep OnAttemptEnd(Call& call, const AttemptOutcome& outcome, absl::Time now,
                         absl::Time call_deadline) const;

  // The delay before the next hedge: hedgingDelay, or with adaptiveDelay
  // max(floor, the window's percentile) once the window has enough samples.
  absl::Duration Delay() const;
  // An attempt's latency (from its send to its end), for adaptiveDelay. An
  // attempt cancelled as a loser gives the time it had run: a lower bound.
  void RecordLatency(absl::Duration latency) const;

  bool IsNonFatal(absl::StatusCode code) const;
  int max_attempts() const { return max_attempts_; }
  // The method's budget and the channel's throttle; null when not set.
  const RetryBudget* budget() const { return budget_.has_value() ? &*budget_ : nullptr; }
  const RetryBudget* throttle() const { return throttle_; }
  // The method's windowed budget; null when it has none.
  WindowedRetryBudget* windowed_budget() const { return windowed_.get(); }
  const LatencyQuantile& latencies() const { return latencies_; }

 private:
  // Whether a hedge a failure already paid for may go: both allow.
  bool Allowed() const;
  // The method's budget's part of a hedge the timer sends: a windowed
  // budget's token; the bucket's token unless a failure `paid` for it.
  bool SpendOnBudget(bool paid) const;
  // Ends `call` with `verdict`: no more sends, the timer disarmed.
  static HedgeStep& EndCall(Call& call, HedgeStep& step, RetryVerdict verdict);
  // Sends the next attempt if one is left (sent < max_attempts), arming
  // the timer for the one after it.
  void SendNext(Call& call, HedgeStep& step) const;

  const int max_attempts_;
  const absl::Duration delay_;
  const std::optional<AdaptiveDelay> adaptive_;
  uint32_t non_fatal_mask_ = 0;  // bit c: code c is non-fatal
  mutable std::optional<RetryBudget> budget_;
  const std::unique_ptr<WindowedRetryBudget> windowed_;
  RetryBudget* const throttle_;
  mutable LatencyQuantile latencies_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_HEDGING_DECIDER_H_
