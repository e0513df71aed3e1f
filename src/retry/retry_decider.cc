#include "src/retry/retry_decider.h"

#include <charconv>

namespace resilience {

Pushback Pushback::Parse(absl::string_view value) {
  int64_t ms = -1;
  const char* end = value.data() + value.size();
  auto [ptr, error] = std::from_chars(value.data(), end, ms);
  if (value.empty() || error != std::errc() || ptr != end || ms < 0) {
    return {Kind::kStop, absl::ZeroDuration()};
  }
  return {Kind::kDelay, absl::Milliseconds(ms)};
}

RetryDecider::RetryDecider(const Options& options, RandomSource& random)
    : max_attempts_(options.max_attempts < 1 ? 1 : options.max_attempts),
      backoff_(options.backoff, random),
      windowed_(options.windowed_budget.has_value()
                    ? std::make_unique<WindowedRetryBudget>(
                          *options.windowed_budget,
                          options.clock != nullptr ? *options.clock : Clock::Real())
                    : nullptr),
      throttle_(options.throttle) {
  if (options.budget.has_value() && windowed_ == nullptr) {
    budget_.emplace(options.budget->max_tokens, options.budget->token_ratio);
  }
  for (absl::StatusCode code : options.retryable_codes) {
    const int c = static_cast<int>(code);
    if (c > 0 && c < 32) retryable_mask_ |= uint32_t{1} << c;  // OK is never retryable
  }
}

bool RetryDecider::IsRetryable(absl::StatusCode code) const {
  const int c = static_cast<int>(code);
  return c > 0 && c < 32 && (retryable_mask_ & (uint32_t{1} << c)) != 0;
}

RetryDecision RetryDecider::Decide(int attempts, const AttemptOutcome& outcome, absl::Time now,
                                   absl::Time call_deadline) const {
  RetryDecision decision;
  if (windowed_ != nullptr && attempts == 1) windowed_->RecordCall();
  if (outcome.code == absl::StatusCode::kOk) {
    if (budget_.has_value()) budget_->RecordSuccess();
    if (throttle_ != nullptr) throttle_->RecordSuccess();
    return decision;  // kSucceeded
  }
  if (outcome.deadline_passed && !outcome.per_attempt_deadline) {
    decision.verdict = RetryVerdict::kCallDeadline;
    return decision;
  }
  decision.attempt_timed_out = outcome.deadline_passed;
  const bool retryable = IsRetryable(outcome.code);
  if (!outcome.rejected_locally) {
    if (retryable && budget_.has_value() && !outcome.endpoint_known_bad) budget_->RecordFailure();
    if ((retryable || outcome.pushback.kind != Pushback::Kind::kNone) && throttle_ != nullptr) {
      throttle_->RecordFailure();
    }
  }

  if (outcome.cancelled) {
    decision.verdict = RetryVerdict::kCancelled;
  } else if (outcome.rejected_locally) {
    decision.verdict = RetryVerdict::kRejectedLocally;
  } else if (!retryable) {
    decision.verdict = RetryVerdict::kNotRetryable;
  } else if (attempts - outcome.repicks >= max_attempts_) {
    decision.verdict = RetryVerdict::kAttemptsExhausted;
  } else if (outcome.pushback.kind == Pushback::Kind::kStop) {
    decision.verdict = RetryVerdict::kPushbackStop;
  } else if ((budget_.has_value() && !outcome.endpoint_known_bad && !budget_->AllowRetry()) ||
             (windowed_ != nullptr && !windowed_->AllowRetry()) ||
             (throttle_ != nullptr && !throttle_->AllowRetry())) {
    decision.verdict = RetryVerdict::kBudgetSpent;
  } else {
    // A known-bad endpoint's failure is retried at once (as Finagle
    // requeues a failure that is safe to send elsewhere): the backoff spares
    // a struggling service, and the service serves; waiting only lets the
    // other callers' picks bring round_robin back to the bad endpoint.
    decision.delay = outcome.pushback.kind == Pushback::Kind::kDelay ? outcome.pushback.delay
                     : outcome.endpoint_known_bad ? absl::ZeroDuration()
                                                  : backoff_.Delay(attempts);
    if (now + decision.delay >= call_deadline) {
      decision.verdict = RetryVerdict::kBackoffPastDeadline;
    } else if (windowed_ != nullptr && !windowed_->TryWithdraw()) {
      decision.verdict = RetryVerdict::kBudgetSpent;
    } else {
      decision.verdict = RetryVerdict::kRetry;
    }
  }
  return decision;
}

}  // namespace resilience
