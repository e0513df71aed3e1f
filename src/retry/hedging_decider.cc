#include "src/retry/hedging_decider.h"

#include <algorithm>

namespace resilience {

HedgingDecider::HedgingDecider(const Options& options)
    : max_attempts_(std::clamp(options.max_attempts, 1, kMaxAttempts)),
      delay_(std::max(options.delay, absl::ZeroDuration())),
      adaptive_(options.adaptive_delay),
      windowed_(options.windowed_budget.has_value()
                    ? std::make_unique<WindowedRetryBudget>(
                          *options.windowed_budget,
                          options.clock != nullptr ? *options.clock : Clock::Real())
                    : nullptr),
      throttle_(options.throttle) {
  if (options.budget.has_value() && windowed_ == nullptr) {
    budget_.emplace(options.budget->max_tokens, options.budget->token_ratio);
  }
  for (absl::StatusCode code : options.non_fatal_codes) {
    const int c = static_cast<int>(code);
    if (c > 0 && c < 32) non_fatal_mask_ |= uint32_t{1} << c;  // OK is never non-fatal
  }
}

bool HedgingDecider::Allowed() const {
  return (!budget_.has_value() || budget_->AllowRetry()) &&
         (windowed_ == nullptr || windowed_->AllowRetry()) &&
         (throttle_ == nullptr || throttle_->AllowRetry());
}

bool HedgingDecider::SpendOnBudget(bool paid) const {
  if (windowed_ != nullptr) return windowed_->TryWithdraw();
  if (!budget_.has_value()) return true;
  return paid ? budget_->AllowRetry() : budget_->TrySpend();
}

bool HedgingDecider::IsNonFatal(absl::StatusCode code) const {
  const int c = static_cast<int>(code);
  return c > 0 && c < 32 && (non_fatal_mask_ & (uint32_t{1} << c)) != 0;
}

absl::Duration HedgingDecider::Delay() const {
  if (!adaptive_.has_value()) return delay_;
  const std::optional<absl::Duration> observed = latencies_.Quantile(adaptive_->percentile);
  if (!observed.has_value()) return std::max(delay_, adaptive_->floor);
  return std::max(*observed, adaptive_->floor);
}

void HedgingDecider::RecordLatency(absl::Duration latency) const {
  if (adaptive_.has_value()) latencies_.Record(latency);
}

void HedgingDecider::SendNext(Call& call, HedgeStep& step) const {
  step.send = true;
  ++call.sent;
  ++call.in_flight;
  if (call.sent < max_attempts_) {
    step.arm_timer = Delay();
  } else {
    step.cancel_timer = true;
  }
}

HedgeStep HedgingDecider::Start(Call& call) const {
  if (windowed_ != nullptr) windowed_->RecordCall();
  HedgeStep step;
  SendNext(call, step);
  step.cancel_timer = false;  // there is none yet
  return step;
}

HedgeStep HedgingDecider::OnTimer(Call& call, absl::Time now, absl::Time call_deadline) const {
  HedgeStep step;
  if (call.ended || call.stopped.has_value() || call.sent >= max_attempts_) return step;
  const bool paid = call.paid;
  call.paid = false;
  if (now >= call_deadline) {
    // The attempts in flight end with the deadline; with none (the timer
    // was a pushback's postponed hedge), nothing else would end the call.
    return call.in_flight > 0 ? step : EndCall(call, step, RetryVerdict::kCallDeadline);
  }
  // The budget's token is taken only once the throttle let the hedge go.
  const bool allowed = (throttle_ == nullptr || throttle_->AllowRetry()) && SpendOnBudget(paid);
  if (!allowed) {
    call.stopped = RetryVerdict::kBudgetSpent;
    // Likewise: a postponed hedge the budget refuses leaves nothing in
    // flight to end the call.
    return call.in_flight > 0 ? step : EndCall(call, step, RetryVerdict::kBudgetSpent);
  }
  SendNext(call, step);
  return step;
}

HedgeStep& HedgingDecider::EndCall(Call& call, HedgeStep& step, RetryVerdict verdict) {
  call.ended = true;
  step.verdict = verdict;
  step.cancel_timer = true;
  step.send = false;
  step.arm_timer.reset();
  return step;
}

HedgeStep HedgingDecider::OnAttemptEnd(Call& call, const AttemptOutcome& outcome, absl::Time now,
                                       absl::Time call_deadline) const {
  HedgeStep step;
  if (call.in_flight > 0) --call.in_flight;
  if (call.ended) return step;  // a loser, cancelled after the call ended
  auto end = [&](RetryVerdict verdict) { return EndCall(call, step, verdict); };
  if (outcome.code == absl::StatusCode::kOk) {
    if (budget_.has_value()) budget_->RecordSuccess();
    if (throttle_ != nullptr) throttle_->RecordSuccess();
    return end(RetryVerdict::kSucceeded);
  }
  if (outcome.deadline_passed) return end(RetryVerdict::kCallDeadline);
  if (outcome.cancelled) return end(RetryVerdict::kCancelled);
  if (outcome.rejected_locally) {
    call.stopped = RetryVerdict::kRejectedLocally;
  } else if (!IsNonFatal(outcome.code)) {
    // A6: an answer with a pushback costs the throttle a token, whatever
    // its code.
    if (outcome.pushback.kind != Pushback::Kind::kNone && throttle_ != nullptr) {
      throttle_->RecordFailure();
    }
    return end(RetryVerdict::kNotRetryable);
  } else {
    if (budget_.has_value()) budget_->RecordFailure();
    if (throttle_ != nullptr) throttle_->RecordFailure();
    if (outcome.pushback.kind == Pushback::Kind::kStop) {
      call.stopped = RetryVerdict::kPushbackStop;
    } else if (call.sent < max_attempts_ && !call.stopped.has_value()) {
      if (!Allowed()) {
        call.stopped = RetryVerdict::kBudgetSpent;
      } else if (outcome.pushback.kind == Pushback::Kind::kDelay) {
        // A6: the server's delay replaces the hedging delay for the next
        // hedge (it is still subject to the budget when it fires).
        if (now + outcome.pushback.delay >= call_deadline) {
          call.stopped = RetryVerdict::kBackoffPastDeadline;
        } else {
          step.arm_timer = outcome.pushback.delay;
          call.paid = true;
          return step;
        }
      } else if (windowed_ != nullptr && !windowed_->TryWithdraw()) {
        call.stopped = RetryVerdict::kBudgetSpent;  // another call took the last token
      } else {
        SendNext(call, step);
        return step;
      }
    }
  }
  if (call.stopped.has_value()) {
    step.cancel_timer = true;
  }
  if (call.in_flight > 0) return step;  // the others may still win
  return end(call.stopped.value_or(RetryVerdict::kAttemptsExhausted));
}

}  // namespace resilience
