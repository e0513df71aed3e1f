// The decisions of a RetriedUnaryCall: what each event changes (under its
// mu_), in the order of the stages: retry/hedging -> per-attempt timeout ->
// breaker -> counters. retried_unary_call.cc has the hooks, the queue and
// the actions done outside the lock.

#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/client_context.h"
#include "src/client_interceptors/health_name_check.h"
#include "src/client_interceptors/retried_unary_call.h"
#include "src/client_interceptors/shadow_bulkhead.h"
#include "src/grpc_common/reported_load.h"

namespace resilience {
void RetriedUnaryCall::Begin(Actions& actions) {
  if (hedging_ != nullptr) {
    ApplyHedgeStep(hedging_->Start(hedge_), nullptr, AttemptOutcome(), actions);
  } else {
    Launch(actions);
  }
}

void RetriedUnaryCall::EnterBulkhead(Actions& actions) {
  Bulkhead& bulkhead = *state_->bulkhead;
  const absl::Duration time_left = call_deadline_ - env_.clock->WallNow();
  const EnforcementMode mode = state_->tally->enforcement.bulkhead();
  if (mode != EnforcementMode::kEnforce) {
    EnterShadowBulkhead(mode, time_left);
    Begin(actions);
    return;
  }
  switch (const Bulkhead::Entry entry = bulkhead.Enter(slot_wait_, time_left)) {
    case Bulkhead::Entry::kAdmitted:
      holds_slot_ = true;
      Begin(actions);
      return;
    case Bulkhead::Entry::kQueued:
      // Like a backoff: a timer of the call, at the wait's end.
      counters_.BulkheadWaited();
      grant_pending_ = true;
      wait_from_ = bulkhead.clock().Now();
      wait_by_deadline_ = time_left < bulkhead.options().max_wait;
      timers_.push_back(std::make_unique<Timer>(this));
      wait_timer_ = timers_.back().get();
      wait_timer_->at = env_.clock->WallNow() + (slot_wait_.wait_until() - wait_from_);
      ++outstanding_;
      actions.arm = wait_timer_;
      return;
    case Bulkhead::Entry::kQueueFull:
    case Bulkhead::Entry::kNoTimeToWait:
      counters_.RejectedByBulkhead();
      bulkhead_rejected_ = true;
      Finish(BulkheadRejectionStatus(method_, bulkhead.options(), entry, absl::ZeroDuration(),
                                     false),
             actions);
      return;
  }
}

void RetriedUnaryCall::EnterShadowBulkhead(EnforcementMode mode, absl::Duration time_left) {
  const ShadowBulkheadHold hold =
      resilience::EnterShadowBulkhead(mode, *state_->bulkhead, slot_wait_, time_left, counters_);
  holds_slot_ = hold.slot;
  shadow_queued_ = hold.queued;  // judged at the call's end (LeaveBulkhead())
}

void RetriedUnaryCall::WaitEnded(Actions& actions) {
  wait_over_ = true;
  Bulkhead& bulkhead = *state_->bulkhead;
  if (!bulkhead.EndWait(slot_wait_)) {
    // Granted (OnSlotGranted() may still be on its way): the call goes,
    // unless cancelled meanwhile (Launch() ends it then).
    holds_slot_ = true;
    Begin(actions);
    return;
  }
  grant_pending_ = false;  // none will come
  if (cancelled_) {
    Finish(CancelledStatus(method_, " while waiting for a bulkhead slot"), actions);
    return;
  }
  counters_.RejectedByBulkhead();
  bulkhead_rejected_ = true;
  Finish(BulkheadRejectionStatus(method_, bulkhead.options(), Bulkhead::Entry::kQueued,
                                 bulkhead.clock().Now() - wait_from_, wait_by_deadline_),
         actions);
}

int RetriedUnaryCall::InFlight() const {
  int n = 0;
  for (const auto& a : attempts_) n += a->ended ? 0 : 1;
  return n;
}

void RetriedUnaryCall::Launch(Actions& actions) {
  const absl::Time now = env_.clock->WallNow();
  const int made = static_cast<int>(attempts_.size());
  if (cancelled_ || now >= call_deadline_) {
    if (hedging_ == nullptr) {
      Finish(cancelled_ ? CancelledStatus(method_, "")
                        : OwnDeadlineStatus(deadlines_, LocalEnd::kCallDeadline, made, made),
             actions);
      return;
    }
    // The decider counted this hedge as sent: it ends before it started.
    AttemptOutcome outcome;
    outcome.cancelled = cancelled_;
    outcome.code = cancelled_ ? absl::StatusCode::kCancelled : absl::StatusCode::kDeadlineExceeded;
    outcome.deadline_passed = !cancelled_;
    ApplyHedgeStep(hedging_->OnAttemptEnd(hedge_, outcome, now, call_deadline_), nullptr, outcome,
                   actions);
    return;
  }
  // Counters: a hedge is decided when it is launched, a retry when the
  // attempt before it ended (Ended()).
  counters_.AttemptMade();
  if (made > 0 && hedging_ != nullptr) counters_.RetryDecided(/*hedge=*/true);
  attempts_.push_back(std::make_unique<Attempt>(this));
  Attempt& a = *attempts_.back();
  a.sent_at = now;
  a.sent_monotonic = env_.clock->Now();
  // Per-attempt timeout: the attempt's own deadline, set below. Breaker:
  // a rejection makes no call at all.
  a.admission = breaker_.Admit(counters_, info_->channel());
  if (!a.admission.admitted()) {
    a.rejected_locally = true;
    counters_.RejectedByBreaker();
    Ended(a, actions);
    return;
  }
  // Where it goes: the endpoint the router picks, the call's earlier
  // endpoints avoided while another is usable.
  if (env_.router != nullptr && state_->picker != nullptr) {
    absl::InlinedVector<const EndpointPicker::Endpoint*, 3> tried;
    for (const auto& earlier : attempts_) {
      if (earlier->route.endpoint != nullptr) tried.push_back(earlier->route.endpoint.get());
    }
    // Only an enforcing breaker takes endpoints out of the picker's tiers
    // (a shadow or switched-off one gates nothing: docs/shadow-mode.md).
    const bool gates = state_->tally->enforcement.breaker() == EnforcementMode::kEnforce;
    a.route = env_.router->Pick(*state_->picker,
                                gates ? state_->endpoint_breakers.get() : nullptr, tried,
                                made > 0);
    if (a.route.all_forced_open) {
      a.admission = Admission();  // no attempt: neutral to the breaker
      a.rejected_locally = true;
      a.forced_out = true;
      counters_.RejectedByBreaker();
      Ended(a, actions);
      return;
    }
    if (a.route.endpoint != nullptr) EndpointRouter::Started(a.route);
  }
  grpc::ClientContext* attempt = &a.context.emplace();
  for (const auto& [key, value] : metadata_) attempt->AddMetadata(key, value);
  // A routed attempt's answer feeds the picker: ask for the server's load.
  if (a.route.endpoint != nullptr) attempt->AddMetadata(kLoadReportRequestKey, "1");
  if (made > 0) {
    const std::string previous = absl::StrCat(made);
    attempt->AddMetadata(kPreviousAttemptsKey, previous);
    attempt->AddMetadata(kRetryAttemptKey, previous);
  }
  // The caller's compression request is in its metadata, copied above.
  grpc::ClientContext* caller = info_->client_context();
  if (caller->credentials() != nullptr) attempt->set_credentials(caller->credentials());
  a.deadline = call_deadline_;
  if (const std::optional<absl::Duration>& limit = state_->retry.per_attempt_timeout;
      hedging_ == nullptr && limit.has_value() && now + *limit < call_deadline_) {
    a.deadline = now + *limit;
    a.per_attempt_deadline = true;
  }
  if (a.deadline != absl::InfiniteFuture()) attempt->set_deadline(absl::ToChronoTime(a.deadline));
  if (const std::optional<bool>& wait = state_->policy->wait_for_ready; wait.has_value()) {
    attempt->set_wait_for_ready(*wait);
  }
  ++outstanding_;
  actions.send.push_back(&a);
}

void RetriedUnaryCall::Ended(Attempt& a, Actions& actions) {
  a.ended = true;
  const absl::Time now = env_.clock->WallNow();
  grpc::Status status =
      a.forced_out ? ForcedOutStatus()
                   : (a.rejected_locally ? breaker_.Rejection(method_, a.admission) : a.status);
  // The attempt's end, classified once.
  AttemptEnd end;
  end.code = status.error_code();
  end.cancelled_here = cancelled_ || a.loser;  // a loser says nothing either
  end.per_attempt = a.per_attempt_deadline;
  end.deadline = a.deadline;
  end.sent_at = a.sent_at;
  end.ended_at = now;
  const LocalEnd local = a.rejected_locally ? LocalEnd::kNone : ClassifyAttemptEnd(end);
  AttemptOutcome outcome;
  outcome.code = static_cast<absl::StatusCode>(status.error_code());
  outcome.rejected_locally = a.rejected_locally;
  outcome.cancelled = cancelled_;
  outcome.deadline_passed = DeadlinePassed(end, local);
  outcome.per_attempt_deadline = a.per_attempt_deadline;
  if (!a.rejected_locally && !status.ok() && !a.loser) {
    if (std::optional<grpc::string_ref> pushback =
            FindMetadata(a.context->GetServerTrailingMetadata(), kPushbackKey)) {
      outcome.pushback = Pushback::Parse(absl::string_view(pushback->data(), pushback->size()));
    }
  }
  // The endpoint that served it (per-endpoint breakers): the one the
  // router picked, else its peer, empty when it reached no server
  // (BreakerStage::EndpointOf()).
  const bool routed = a.route.endpoint != nullptr;
  if (routed) ReportToRouter(a, end, local);
  outcome.endpoint_known_bad = breaker_.Record(
      a.admission, end.code, local, env_.breaker_clock->Now(),
      routed ? a.route.endpoint->name()
             : (breaker_.wants_endpoint(a.admission) && a.context.has_value()
                    ? BreakerStage::EndpointOf(a.context->peer())
                    : std::string()),
      outcome.pushback.kind != Pushback::Kind::kNone);
  if (hedging_ != nullptr && !a.rejected_locally && !cancelled_) {
    hedging_->RecordLatency(env_.clock->Now() - a.sent_monotonic);
  }
  // A breaker rejection, or a channel that is not READY failing fast: keep
  // its reconnection going (reconnect_watch.h).
  state_->reconnect->Poke(info_->channel(), status.error_code());
  if (state_->health_check != nullptr && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    state_->health_check->OnUnavailable(status.error_message());
  }
  if (finished_) return;  // a loser, cancelled after the call was decided
  shown_ = &a;
  if (hedging_ != nullptr) {
    ApplyHedgeStep(hedging_->OnAttemptEnd(hedge_, outcome, now, call_deadline_), &a, outcome,
                   actions);
    return;
  }
  const int made = static_cast<int>(attempts_.size());
  if (outcome.endpoint_known_bad && !routed && repicks_ < kMaxRepicks) ++repicks_;
  outcome.repicks = repicks_;
  const RetryDecision decision = state_->retry_decider->Decide(made, outcome, now, call_deadline_);
  if (decision.verdict == RetryVerdict::kRetry) {
    counters_.RetryDecided(/*hedge=*/false);
    if (decision.attempt_timed_out) counters_.AttemptTimedOut();
    ArmTimer(decision.delay, /*backoff=*/true, actions);
    return;
  }
  Finish(FinalStatus(decision, std::move(status)), actions);
}

grpc::Status RetriedUnaryCall::ForcedOutStatus() const {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      absl::StrCat(method_,
                                   ": rejected locally: every endpoint of the channel is forced "
                                   "open (an operator's command; set one back to automatic)"));
}

void RetriedUnaryCall::ReportToRouter(const Attempt& a, const AttemptEnd& end, LocalEnd local) {
  // What the picker learns: a cancellation of ours (the caller's, or a
  // hedging loser's) says nothing about the endpoint; the server's own
  // failures and an attempt's timeout count against it; any other answer
  // (NOT_FOUND included) is the endpoint serving.
  EndpointPicker::Result result = EndpointPicker::Result::kSuccess;
  if (end.cancelled_here || local == LocalEnd::kCallDeadline ||
      local == LocalEnd::kDeadlineBeforeStart) {
    result = EndpointPicker::Result::kNeutral;
  } else {
    switch (static_cast<grpc::StatusCode>(end.code)) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
      case grpc::StatusCode::INTERNAL:
      case grpc::StatusCode::UNKNOWN:
      case grpc::StatusCode::DATA_LOSS:
        result = EndpointPicker::Result::kFailure;
        break;
      default:
        break;
    }
  }
  // The load the server reported (orca-load-bin, docs/routing.md), if any.
  std::optional<double> load;
  if (result != EndpointPicker::Result::kNeutral && a.context.has_value()) {
    load = ReportedUtilization(a.context->GetServerTrailingMetadata());
  }
  EndpointRouter::Ended(a.route, env_.clock->Now() - a.sent_monotonic, result, load);
}

void RetriedUnaryCall::ApplyHedgeStep(const HedgeStep& step, Attempt* last,
                                      const AttemptOutcome& outcome, Actions& actions) {
  // Counted once per call, when hedging stops for it.
  if (hedge_.stopped.has_value()) counters_.RetriesStopped(*hedge_.stopped);
  if (step.finished()) {
    RetryDecision decision;
    decision.verdict = step.verdict;
    decision.delay = outcome.pushback.delay;
    grpc::Status status = last != nullptr ? last->status : grpc::Status();
    if (last != nullptr && last->rejected_locally) {
      status = breaker_.Rejection(method_, last->admission);
    }
    if (last == nullptr) {
      status = grpc::Status(static_cast<grpc::StatusCode>(outcome.code), "");
    }
    Finish(FinalStatus(decision, std::move(status)), actions);
    return;
  }
  if (step.cancel_timer || step.arm_timer.has_value()) DisarmTimer(actions);
  if (step.arm_timer.has_value()) ArmTimer(*step.arm_timer, /*backoff=*/false, actions);
  if (step.send) Launch(actions);
}

void RetriedUnaryCall::Finish(grpc::Status status, Actions& actions) {
  finished_ = true;
  final_status_ = std::move(status);
  for (const auto& a : attempts_) {
    if (a->ended || !a->context.has_value()) continue;
    a->loser = true;
    actions.cancel.push_back(&*a->context);
  }
  DisarmTimer(actions);
}

void RetriedUnaryCall::ArmTimer(absl::Duration delay, bool backoff, Actions& actions) {
  timers_.push_back(std::make_unique<Timer>(this));
  live_timer_ = timers_.back().get();
  live_timer_->at = env_.clock->WallNow() + delay;
  timer_is_backoff_ = backoff;
  ++outstanding_;
  actions.arm = live_timer_;
}

void RetriedUnaryCall::DisarmTimer(Actions& actions) {
  if (live_timer_ == nullptr) return;
  if (actions.arm == live_timer_) {
    // Armed by this same state change and not set yet: it never will be,
    // so no event will come for its count.
    actions.arm = nullptr;
    --outstanding_;
  } else {
    // Its event still comes (not fired) and ends its count.
    actions.cancel_timer = &live_timer_->alarm;
  }
  live_timer_ = nullptr;
}

grpc::Status RetriedUnaryCall::FinalStatus(const RetryDecision& decision, grpc::Status last) {
  const int made = static_cast<int>(attempts_.size());
  if (decision.attempt_timed_out) {
    counters_.AttemptTimedOut();
    last = OwnDeadlineStatus(deadlines_, LocalEnd::kPerAttemptTimeout, made, made);
  }
  // A hedged call's stop was counted when hedging stopped (ApplyHedgeStep()).
  if (hedging_ == nullptr) counters_.RetriesStopped(decision.verdict);
  switch (decision.verdict) {
    case RetryVerdict::kCallDeadline:
      return OwnDeadlineStatus(deadlines_, LocalEnd::kCallDeadline, made, made);
    case RetryVerdict::kCancelled:
      return CancelledStatus(method_, "");
    case RetryVerdict::kPushbackStop:
      return NotRetriedStatus(method_, made,
                              "the server's grpc-retry-pushback-ms says not to retry", last);
    case RetryVerdict::kBudgetSpent:
      budget_spent_ = true;  // a fallback's cause
      // Which of the two refused: the channel's throttle first (it is the
      // one other methods can have spent).
      return NotRetriedStatus(method_, made,
                              state_->throttle != nullptr && !state_->throttle->AllowRetry()
                                  ? "the channel's retryThrottling is spent (at most maxTokens "
                                    "/ 2 tokens left)"
                                  : "the method's retryBudget on this channel is spent",
                              last);
    case RetryVerdict::kBackoffPastDeadline:
      return NotRetriedStatus(method_, made,
                              absl::StrCat("a retry after ", absl::FormatDuration(decision.delay),
                                           " could not start before the call's deadline"),
                              last);
    case RetryVerdict::kSucceeded:
    case RetryVerdict::kRetry:
    case RetryVerdict::kRejectedLocally:
    case RetryVerdict::kNotRetryable:
    case RetryVerdict::kAttemptsExhausted:
      break;
  }
  return last;
}

}  // namespace resilience
