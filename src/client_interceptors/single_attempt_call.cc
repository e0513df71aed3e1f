#include "src/client_interceptors/single_attempt_call.h"

#include <algorithm>
#include <chrono>

#include "grpc/support/log.h"
#include "grpcpp/client_context.h"
#include "src/client_interceptors/attempt_end.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/health_name_check.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/local_status.h"
#include "src/client_interceptors/retry_throttle_feed.h"
#include "src/client_interceptors/shadow_bulkhead.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

// The caller's deadline (wall clock), infinite when none.
absl::Time CallerDeadlineOf(const grpc::ClientContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

SingleAttemptCall::SingleAttemptCall(ClientRpcInfo* info, std::shared_ptr<ClientMethodState> state,
                                     const CallPlan& plan, const CallEnvironment& env)
    : info_(info),
      hold_(std::move(state)),
      state_(*hold_),
      env_(env),
      has_timeout_(plan.timeout),
      unretried_stub_(plan.unretried_stub),
      counters_(state_, *env.clock),
      breaker_(state_),
      timeout_(*env.timeouts),
      fallback_(env.fallbacks, state_),
      bulkhead_(plan.bulkhead) {}

SingleAttemptCall::~SingleAttemptCall() {
  if (!bulkhead_) return;
  bool scheduled;
  {
    MutexLock lock(&wait_mu_);
    scheduled = wait_ != Wait::kNone;
  }
  // Waits for a Fire() in progress (not from inside it).
  if (scheduled) env_.timeouts->Cancel(&slot_wait_);
  if (holds_slot_) state_.bulkhead->Leave();  // a call that never reached its end
  EndShadowBulkhead();  // out of the queue before the waiter goes
}

void SingleAttemptCall::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) {
    cancelled_.store(true);
    if (waiting_.load()) CancelWait();
    return;  // no Proceed() for a cancel
  }
  bool hijack_now = false;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    if (!Start(methods)) return;  // waits for a bulkhead slot: Resume() goes on
    hijack_now = rejected_;
  }
  if (rejected_) {
    FillRejection(methods);
  } else if (fallback_possible_ && recv_message_ == nullptr) {
    // The caller's buffer, for a fallback: set on the batch that receives
    // (gRPC 1.51 sets it before any hook; PRE_RECV_MESSAGE is a hijacker's).
    recv_message_ = methods->GetRecvMessage();
  }
  if (!rejected_ && breaker_.enabled() && !first_response_.has_value() &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
      methods->GetRecvMessage() != nullptr) {
    first_response_ = env_.breaker_clock->Now();
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) End(methods);
  if (hijack_now) {
    methods->Hijack();  // re-enters Intercept() with this batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

bool SingleAttemptCall::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  started_ = true;
  if (breaker_.enabled()) breaker_.ReadCriticality(*methods->GetSendInitialMetadata());
  PrepareFallback(methods);
  // Metrics: the call and its one attempt.
  counters_.CallStarted();
  counters_.AttemptMade();
  if (unretried_stub_) {
    counters_.NotRetriedStub();
    if (!state_.reported_stub_pass_through.exchange(true)) {
      gpr_log(GPR_ERROR,
              "grpc-resilience: %s: a unary call that does not come from a protobuf generated "
              "stub (e.g. a GenericStub) is passed through without retries; its timeouts and "
              "breaker still apply",
              info_->method());
    }
  }
  sent_at_ = env_.clock->WallNow();
  if (has_timeout_) {
    limit_ = state_.policy->timeout.value_or(absl::InfiniteDuration());
    if (info_->type() == ClientRpcInfo::Type::UNARY &&
        state_.retry.per_attempt_timeout.value_or(absl::InfiniteDuration()) < limit_) {
      limit_ = *state_.retry.per_attempt_timeout;
    }
  }
  if (bulkhead_) {
    // A wait ends by the call's deadline: the caller's, or the policy's.
    const absl::Duration time_left =
        std::min(CallerDeadlineOf(*info_->client_context()), sent_at_ + limit_) - sent_at_;
    if (const EnforcementMode mode = state_.tally->enforcement.bulkhead();
        mode != EnforcementMode::kEnforce) {
      EnterShadowBulkhead(mode, time_left);
      Begin();
      return true;
    }
    Bulkhead& bulkhead = *state_.bulkhead;
    MutexLock lock(&wait_mu_);
    switch (const Bulkhead::Entry entry = bulkhead.Enter(slot_wait_, time_left)) {
      case Bulkhead::Entry::kAdmitted:
        holds_slot_ = true;
        break;
      case Bulkhead::Entry::kQueued: {
        counters_.BulkheadWaited();
        waiting_batch_ = methods;
        wait_from_ = bulkhead.clock().Now();
        wait_by_deadline_ = time_left < bulkhead.options().max_wait;
        wait_ = Wait::kWaiting;
        waiting_.store(true);
        TimeoutScheduler& timers = *env_.timeouts;
        timers.Schedule(&slot_wait_,
                        timers.clock().Now() + (slot_wait_.wait_until() - wait_from_));
        return false;
      }
      case Bulkhead::Entry::kQueueFull:
      case Bulkhead::Entry::kNoTimeToWait:
        rejected_ = true;
        rejector_ = LocalRejector::kBulkhead;
        rejection_ = BulkheadRejectionStatus(info_->method(), bulkhead.options(), entry,
                                             absl::ZeroDuration(), false);
        counters_.RejectedByBulkhead();
        return true;
    }
  }
  Begin();
  return true;
}

void SingleAttemptCall::EnterShadowBulkhead(EnforcementMode mode, absl::Duration time_left) {
  const ShadowBulkheadHold hold =
      resilience::EnterShadowBulkhead(mode, *state_.bulkhead, slot_wait_, time_left, counters_);
  holds_slot_ = hold.slot;
  shadow_queued_ = hold.queued;
}

void SingleAttemptCall::EndShadowBulkhead() {
  if (!shadow_queued_) return;
  shadow_queued_ = false;
  resilience::EndShadowBulkhead(*state_.bulkhead, slot_wait_, counters_);
}

void SingleAttemptCall::Begin() {
  // Timeout: the policy's `timeout` (the call's deadline, gRPC's meaning)
  // or, for a unary call, its one attempt's per-attempt timeout when that
  // is sooner, from the call's start (a wait for a bulkhead slot counts).
  // The caller's own earlier deadline needs nothing from us: gRPC
  // enforces it.
  if (has_timeout_ && sent_at_ + limit_ < CallerDeadlineOf(*info_->client_context())) {
    const bool per_attempt =
        info_->type() == ClientRpcInfo::Type::UNARY &&
        state_.retry.per_attempt_timeout.value_or(absl::InfiniteDuration()) == limit_ &&
        state_.policy->timeout.value_or(absl::InfiniteDuration()) > limit_;
    const bool waited = waiting_batch_ != nullptr;
    timeout_.Arm(info_->client_context(),
                 waited ? sent_at_ + limit_ - env_.clock->WallNow() : limit_, per_attempt);
  }
  // Breaker.
  if (breaker_.enabled()) {
    admission_ = breaker_.Admit(counters_, info_->channel());
    if (!admission_.admitted()) {
      rejected_ = true;
      rejector_ = LocalRejector::kBreaker;
      rejection_ = breaker_.Rejection(info_->method(), admission_);
      counters_.RejectedByBreaker();
      timeout_.Disarm();
    }
  }
}

void SingleAttemptCall::OnSlotGranted() {
  {
    MutexLock lock(&wait_mu_);
    wait_ = Wait::kGranted;
  }
  // When it returns the timer neither fires nor is firing (a Fire() in
  // progress sees kGranted and leaves the call alone).
  env_.timeouts->Cancel(&slot_wait_);
  holds_slot_ = true;
  waiting_.store(false);
  if (cancelled_.load()) {
    rejected_ = true;
    rejection_ = CancelledStatus(info_->method(), " while waiting for a bulkhead slot");
  } else {
    Begin();
  }
  Resume();  // last use of `this`
}

void SingleAttemptCall::OnWaitTimer() {
  bool cancelled = false;
  {
    MutexLock lock(&wait_mu_);
    if (wait_ == Wait::kCancelled) {
      cancelled = true;
    } else if (wait_ != Wait::kWaiting || !state_.bulkhead->EndWait(slot_wait_)) {
      return;  // granted: OnSlotGranted() goes on
    }
    wait_ = Wait::kDone;
  }
  waiting_.store(false);
  rejected_ = true;
  if (cancelled) {
    rejection_ = CancelledStatus(info_->method(), " while waiting for a bulkhead slot");
  } else {
    rejector_ = LocalRejector::kBulkhead;
    rejection_ = BulkheadRejectionStatus(info_->method(), state_.bulkhead->options(),
                                         Bulkhead::Entry::kQueued,
                                         state_.bulkhead->clock().Now() - wait_from_,
                                         wait_by_deadline_);
    counters_.RejectedByBulkhead();
  }
  Resume();  // last use of `this`
}

void SingleAttemptCall::CancelWait() {
  {
    MutexLock lock(&wait_mu_);
    if (wait_ != Wait::kWaiting || !state_.bulkhead->EndWait(slot_wait_)) return;
    wait_ = Wait::kCancelled;  // only the timer resumes the call now
  }
  // Not from inside the PRE_SEND_CANCEL hook (the context's lock is held):
  // the timer's thread ends the call, now.
  TimeoutScheduler& timers = *env_.timeouts;
  if (timers.Cancel(&slot_wait_)) timers.Schedule(&slot_wait_, timers.clock().Now());
}

void SingleAttemptCall::Resume() {
  grpc::experimental::InterceptorBatchMethods* methods = waiting_batch_;
  if (rejected_) {
    FillRejection(methods);
    methods->Hijack();  // re-enters Intercept() with the batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

void SingleAttemptCall::FillRejection(grpc::experimental::InterceptorBatchMethods* methods) {
  // Before Hijack(), which clears this batch's hook points. Only streams
  // that send several messages fail their writes: for unary and
  // server-streaming calls the one message rides in the first batch, and
  // failing it would turn the async Finish tag's ok into false.
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE) &&
      (info_->type() == ClientRpcInfo::Type::CLIENT_STREAMING ||
       info_->type() == ClientRpcInfo::Type::BIDI_STREAMING)) {
    methods->FailHijackedSendMessage();
  }
  if (!fallback_ran_ &&
      (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE) ||
       methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS))) {
    RunRejectionFallback();
  }
  const bool answered = fallback_.fell_back();
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE) &&
      (!answered || !fallback_.status().ok() || !fallback_.ParseInto(methods->GetRecvMessage()))) {
    methods->FailHijackedRecvMessage();
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS)) {
    *methods->GetRecvStatus() = answered ? fallback_.status() : rejection_;
    if (rejector_.has_value()) MarkRejectedLocally(methods->GetRecvTrailingMetadata(), *rejector_);
    if (answered) FallbackStage::MarkFellBack(methods->GetRecvTrailingMetadata());
  }
}

void SingleAttemptCall::End(grpc::experimental::InterceptorBatchMethods* methods) {
  grpc::Status* status = methods->GetRecvStatus();
  // The end is classified for the breaker and the timeout only: a call with
  // neither (a bulkhead or metrics alone) reads no clock and no deadline
  // here.
  if (!rejected_ && (breaker_.enabled() || has_timeout_)) {
    timeout_.Disarm();  // after this, fired() no longer changes
    AttemptEnd end;
    end.code = status->error_code();
    end.timer_fired = timeout_.fired();
    end.cancelled_here = cancelled_.load() && !end.timer_fired;
    end.per_attempt = end.timer_fired && timeout_.per_attempt();
    end.deadline = CallerDeadlineOf(*info_->client_context());
    end.sent_at = sent_at_;
    end.ended_at = env_.clock->WallNow();
    const LocalEnd local = ClassifyAttemptEnd(end);
    breaker_.Record(admission_, end.code, local,
                    first_response_.value_or(env_.breaker_clock->Now()),
                    breaker_.wants_endpoint(admission_)
                        ? BreakerStage::EndpointOf(info_->client_context()->peer())
                        : std::string(),
                    !status->ok() && FindMetadata(*methods->GetRecvTrailingMetadata(), kPushbackKey).has_value());
    if (has_timeout_) {
      CallDeadlines deadlines;
      deadlines.method = info_->method();
      deadlines.call_limit = limit_;
      deadlines.attempt_limit = limit_;
      if (end.timer_fired && end.code == grpc::StatusCode::CANCELLED) {
        if (local == LocalEnd::kPerAttemptTimeout) counters_.AttemptTimedOut();
        deadlines.source = DeadlineSource::kPolicy;
        *status = OwnDeadlineStatus(deadlines, local, /*attempt=*/1, /*attempts=*/0);
      } else if (!end.timer_fired && DeadlinePassed(end, local)) {
        // gRPC's bare "Deadline Exceeded" for the caller's deadline.
        deadlines.source = DeadlineSource::kCaller;
        *status = OwnDeadlineStatus(deadlines, LocalEnd::kCallDeadline, 1, 0);
      }
    }
  }
  // A rejection the fallback answered counts as the rejection.
  counters_.CallEnded(static_cast<int>(rejected_ && fallback_.fell_back() ? rejection_.error_code()
                                                                         : status->error_code()));
  FeedRetryThrottle(state_, *info_->client_context(), methods);
  state_.reconnect->Poke(info_->channel(), status->error_code());
  if (state_.health_check != nullptr && status->error_code() == grpc::StatusCode::UNAVAILABLE) {
    state_.health_check->OnUnavailable(status->error_message());
  }
  if (holds_slot_) {
    holds_slot_ = false;
    state_.bulkhead->Leave();  // may resume the next waiting call, here
  }
  EndShadowBulkhead();
  if (env_.events != nullptr && env_.events->pending()) {
    env_.DeliverEvents(internal::CallerBlocks(methods));
  }
  if (fallback_possible_ && !rejected_ && !status->ok()) FallBackOnFailure(methods, status);
}

}  // namespace resilience
