#include "src/client_interceptors/retry_interceptor.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/support/log.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "src/client_interceptors/call_plan.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/stub_kind.h"

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The value of trailer `key` in `trailers`, if there.
std::optional<grpc::string_ref> Trailer(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers, const char* key) {
  auto it = trailers.find(grpc::string_ref(key, std::strlen(key)));
  if (it == trailers.end()) return std::nullopt;
  return it->second;
}

}  // namespace

grpc::experimental::Interceptor* MakeRetryInterceptor(ClientResilienceImpl& resilience,
                                                      grpc::experimental::ClientRpcInfo* info) {
  const CallPlan plan = PlanCall(resilience, info);
  if (plan.state == nullptr) return nullptr;
  ClientMethodState& state = *plan.state;
  state.calls.fetch_add(1, std::memory_order_relaxed);
  if (plan.unretried_stub) {
    state.not_retried_stub_calls.fetch_add(1, std::memory_order_relaxed);
    if (!state.reported_stub_pass_through.exchange(true)) {
      gpr_log(GPR_ERROR,
              "grpc-resilience: %s: a unary call that does not come from a protobuf generated "
              "stub (e.g. a GenericStub) is passed through without retries; its timeouts and "
              "breaker still apply",
              info->method());
    }
  }
  if (!plan.retry) return nullptr;
  return new RetryInterceptor(info, &state, resilience.clock());
}

RetryInterceptor::RetryInterceptor(grpc::experimental::ClientRpcInfo* info,
                                   ClientMethodState* state, Clock& breaker_clock)
    : info_(info),
      state_(state),
      breaker_clock_(breaker_clock),
      method_(info->method()),
      hedging_(state->hedging_decider.get()) {}

RetryInterceptor::~RetryInterceptor() = default;

void RetryInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) {
    Cancel();
    return;  // no Proceed() for a cancel
  }
  if (methods_ == nullptr &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    Start(methods);
    return;  // no Proceed(): the call is hijacked when its result is known
  }
  FillHijackedReceive(methods);  // the re-entry after Hijack()
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    meter_.End(*state_, static_cast<int>(methods->GetRecvStatus()->error_code()));
  }
  methods->Proceed();
}

void RetryInterceptor::Cancel() {
  std::vector<grpc::ClientContext*> attempts;
  grpc::Alarm* alarm = nullptr;
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
    for (const auto& a : attempts_) {
      if (!a->ended && a->context != nullptr) attempts.push_back(a->context.get());
    }
    if (live_timer_ != nullptr) alarm = &live_timer_->alarm;
  }
  // Outside the lock: either may complete inline and call back into us.
  // Neither object can go away meanwhile: attempts and timers live as long
  // as this interceptor, which lives as long as the caller's context, on
  // which TryCancel() is running; with cancelled_ set no new one is made.
  for (grpc::ClientContext* attempt : attempts) attempt->TryCancel();
  if (alarm != nullptr) alarm->Cancel();
}

void RetryInterceptor::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  meter_.Begin(*state_);
  methods_ = methods;
  caller_blocks_ = internal::CallerBlocks(methods);
  if (const auto* caller = methods->GetSendInitialMetadata(); !caller->empty()) {
    metadata_ = *caller;
  }
  request_ = *methods->GetSerializedSendMessage();  // a reference-counted copy
  // gRPC's meaning of the policy's `timeout`: the call's deadline is the
  // earlier of the caller's and call start + timeout.
  const auto caller_deadline = info_->client_context()->deadline();
  if (caller_deadline != std::chrono::system_clock::time_point::max()) {
    call_deadline_ = absl::FromChrono(caller_deadline);
  }
  if (const std::optional<absl::Duration>& timeout = state_->policy->timeout;
      timeout.has_value()) {
    const absl::Time by_policy = absl::Now() + *timeout;
    if (by_policy < call_deadline_) {
      call_deadline_ = by_policy;
      deadline_source_ = DeadlineSource::kPolicy;
    }
  }
  channel_ = methods->GetInterceptedChannel();
  if (caller_blocks_) {
    // This thread polls the call's own queue, as a blocking call would:
    // attempts and timers complete here, without waking another thread.
    own_cq_ = std::make_unique<grpc::CompletionQueue>();
    cq_ = own_cq_.get();
  } else {
    cq_ = AttemptCompletionQueue::Global().cq();
  }
  Actions actions;
  {
    MutexLock lock(&mu_);
    outstanding_ = 1;  // this function's, until its Release()
    if (hedging_ != nullptr) {
      const HedgeStep step = hedging_->Start(hedge_);
      ApplyHedgeStep(step, nullptr, AttemptOutcome(), actions);
    } else {
      Launch(actions);
    }
  }
  Execute(actions);
  if (!caller_blocks_) {
    Release();  // may be the last use of `this`
    return;
  }
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (outstanding_ == 1) break;  // only this function's is left
    }
    void* tag;
    bool ok;
    if (!own_cq_->Next(&tag, &ok)) break;  // never: the queue is shut down below
    static_cast<AttemptCompletionQueue::Tag*>(tag)->Done(ok);
  }
  own_cq_->Shutdown();
  void* tag;
  bool ok;
  while (own_cq_->Next(&tag, &ok)) {
  }
  methods_->Hijack();  // last use of `this`
}

void RetryInterceptor::Release() {
  bool last;
  {
    MutexLock lock(&mu_);
    last = --outstanding_ == 0;
  }
  // A blocking caller's own loop hijacks (it holds one count until then).
  if (last) methods_->Hijack();  // last use of `this`
}

void RetryInterceptor::OnAttemptDone(Attempt* attempt) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    Ended(*attempt, actions);
  }
  Execute(actions);
  Release();  // the attempt's count; may be the last use of `this`
}

void RetryInterceptor::OnTimer(Timer* timer, bool fired) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (timer == live_timer_ && !finished_) {
      live_timer_ = nullptr;
      if (hedging_ == nullptr) {
        if (fired && !cancelled_) {
          Launch(actions);
        } else {
          Finish(CancelledStatus(method_, " during a retry backoff"), actions);
        }
      } else if (fired && !cancelled_) {
        // The call may end here (no hedge goes and nothing is in flight):
        // with the status of the attempt that ended last.
        ApplyHedgeStep(hedging_->OnTimer(hedge_, absl::Now(), call_deadline_), shown_,
                       AttemptOutcome(), actions);
      } else if (cancelled_ && InFlight() == 0) {
        // Waiting out a pushback delay with nothing in flight.
        AttemptOutcome outcome;
        outcome.code = absl::StatusCode::kCancelled;
        outcome.cancelled = true;
        ++hedge_.in_flight;  // OnAttemptEnd() counts an end
        ApplyHedgeStep(hedging_->OnAttemptEnd(hedge_, outcome, absl::Now(), call_deadline_),
                       nullptr, outcome, actions);
      }
    }
  }
  Execute(actions);
  Release();  // the timer's count; may be the last use of `this`
}

void RetryInterceptor::Execute(const Actions& actions) {
  for (grpc::ClientContext* context : actions.cancel) context->TryCancel();
  if (actions.cancel_timer != nullptr) actions.cancel_timer->Cancel();
  if (actions.arm != nullptr) {
    actions.arm->alarm.Set(cq_, absl::ToChronoTime(actions.arm->at),
                           static_cast<AttemptCompletionQueue::Tag*>(actions.arm));
  }
  for (Attempt* attempt : actions.send) {
    // The attempt's interceptors are created in here, on this thread.
    internal::SetCreatingAttempt(true);
    grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
        grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
            channel_.get(), cq_,
            grpc::internal::RpcMethod(method_, /*suffix_for_stats=*/nullptr,
                                      grpc::internal::RpcMethod::NORMAL_RPC),
            attempt->context.get(), request_);
    internal::SetCreatingAttempt(false);
    attempt->reader.reset(call);  // destroyed before its context
    call->StartCall();
    call->Finish(&attempt->response, &attempt->status,
                 static_cast<AttemptCompletionQueue::Tag*>(attempt));
  }
}

int RetryInterceptor::InFlight() const {
  int n = 0;
  for (const auto& a : attempts_) n += a->ended ? 0 : 1;
  return n;
}

void RetryInterceptor::Launch(Actions& actions) {
  const absl::Time now = absl::Now();
  const int made = static_cast<int>(attempts_.size());
  if (cancelled_ || now >= call_deadline_) {
    if (hedging_ == nullptr) {
      Finish(cancelled_ ? CancelledStatus(method_, "")
                        : CallDeadlineStatus(method_, deadline_source_,
                                             state_->policy->timeout.value_or(absl::ZeroDuration()),
                                             made),
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
  state_->attempts.fetch_add(1, std::memory_order_relaxed);
  if (made > 0 && hedging_ != nullptr) {
    state_->retries.fetch_add(1, std::memory_order_relaxed);
    state_->hedges.fetch_add(1, std::memory_order_relaxed);
  }
  attempts_.push_back(std::make_unique<Attempt>(this));
  Attempt& a = *attempts_.back();
  a.sent_at = now;
  if (state_->breaker != nullptr) {
    a.admission = state_->breaker->Allow();
    if (!a.admission.admitted()) {
      a.rejected_locally = true;
      state_->rejected_by_breaker.fetch_add(1, std::memory_order_relaxed);
      Ended(a, actions);
      return;
    }
  }
  a.context = std::make_unique<grpc::ClientContext>();
  grpc::ClientContext* attempt = a.context.get();
  for (const auto& [key, value] : metadata_) attempt->AddMetadata(key, value);
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

void RetryInterceptor::Ended(Attempt& a, Actions& actions) {
  a.ended = true;
  const absl::Time now = absl::Now();
  grpc::Status status = a.rejected_locally
                            ? BreakerRejectionStatus(method_, state_->breaker->kind(),
                                                     a.admission.reason())
                            : a.status;
  AttemptOutcome outcome;
  outcome.code = static_cast<absl::StatusCode>(status.error_code());
  outcome.rejected_locally = a.rejected_locally;
  outcome.cancelled = cancelled_;
  outcome.deadline_passed = outcome.code == absl::StatusCode::kDeadlineExceeded &&
                            now >= a.deadline - kDeadlineSlack;
  outcome.per_attempt_deadline = a.per_attempt_deadline;
  if (!a.rejected_locally && !status.ok() && !a.loser) {
    if (std::optional<grpc::string_ref> pushback =
            Trailer(a.context->GetServerTrailingMetadata(), kPushbackKey)) {
      outcome.pushback = Pushback::Parse(absl::string_view(pushback->data(), pushback->size()));
    }
  }
  if (a.admission.pending()) {
    LocalEnd end = LocalEnd::kNone;
    if (outcome.code == absl::StatusCode::kCancelled && (cancelled_ || a.loser)) {
      end = LocalEnd::kCancelledByCaller;  // neutral: a loser says nothing either
    } else if (outcome.deadline_passed) {
      // Launch() never sends an attempt whose deadline has passed.
      end = a.per_attempt_deadline ? LocalEnd::kPerAttemptTimeout : LocalEnd::kCallDeadline;
    }
    a.admission.Record(state_->policy->breaker.Classify(outcome.code, end),
                       breaker_clock_.Now() - a.admission.start());
  }
  if (hedging_ != nullptr && !a.rejected_locally && !cancelled_) {
    hedging_->RecordLatency(now - a.sent_at);
  }
  // A breaker rejection, or a channel that is not READY failing fast: keep
  // its reconnection going (reconnect_watch.h).
  state_->reconnect->Poke(info_->channel(), status.error_code());
  if (finished_) return;  // a loser, cancelled after the call was decided
  shown_ = &a;
  if (hedging_ != nullptr) {
    ApplyHedgeStep(hedging_->OnAttemptEnd(hedge_, outcome, now, call_deadline_), &a, outcome,
                   actions);
    return;
  }
  const int made = static_cast<int>(attempts_.size());
  const RetryDecision decision = state_->retry_decider->Decide(made, outcome, now, call_deadline_);
  if (decision.verdict == RetryVerdict::kRetry) {
    state_->retries.fetch_add(1, std::memory_order_relaxed);
    if (decision.attempt_timed_out) {
      state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
    }
    ArmTimer(decision.delay, /*backoff=*/true, actions);
    return;
  }
  Finish(FinalStatus(decision, std::move(status)), actions);
}

void RetryInterceptor::ApplyHedgeStep(const HedgeStep& step, Attempt* last,
                                      const AttemptOutcome& outcome, Actions& actions) {
  // Counted once per call, when hedging stops for it.
  if (hedge_.stopped.has_value() && !stop_counted_) {
    stop_counted_ = true;
    if (*hedge_.stopped == RetryVerdict::kBudgetSpent) {
      state_->retry_budget_exhausted.fetch_add(1, std::memory_order_relaxed);
    } else if (*hedge_.stopped == RetryVerdict::kPushbackStop) {
      state_->pushback_stops.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (step.finished()) {
    RetryDecision decision;
    decision.verdict = step.verdict;
    decision.delay = outcome.pushback.delay;
    grpc::Status status = last != nullptr ? last->status : grpc::Status();
    if (last != nullptr && last->rejected_locally) {
      status = BreakerRejectionStatus(method_, state_->breaker->kind(), last->admission.reason());
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

void RetryInterceptor::Finish(grpc::Status status, Actions& actions) {
  finished_ = true;
  final_status_ = std::move(status);
  for (const auto& a : attempts_) {
    if (a->ended || a->context == nullptr) continue;
    a->loser = true;
    actions.cancel.push_back(a->context.get());
  }
  DisarmTimer(actions);
}

void RetryInterceptor::ArmTimer(absl::Duration delay, bool backoff, Actions& actions) {
  timers_.push_back(std::make_unique<Timer>(this));
  live_timer_ = timers_.back().get();
  live_timer_->at = absl::Now() + delay;
  timer_is_backoff_ = backoff;
  ++outstanding_;
  actions.arm = live_timer_;
}

void RetryInterceptor::DisarmTimer(Actions& actions) {
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

grpc::Status RetryInterceptor::FinalStatus(const RetryDecision& decision, grpc::Status last) {
  const int made = static_cast<int>(attempts_.size());
  if (decision.attempt_timed_out) {
    state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
    last = PerAttemptTimeoutStatus(method_, *state_->retry.per_attempt_timeout, made,
                                   state_->retry.max_attempts);
  }
  switch (decision.verdict) {
    case RetryVerdict::kCallDeadline:
      return CallDeadlineStatus(method_, deadline_source_,
                                state_->policy->timeout.value_or(absl::ZeroDuration()),
                                made);
    case RetryVerdict::kCancelled:
      return CancelledStatus(method_, "");
    case RetryVerdict::kPushbackStop:
      if (hedging_ == nullptr) state_->pushback_stops.fetch_add(1, std::memory_order_relaxed);
      return NotRetriedStatus(method_, made,
                              "the server's grpc-retry-pushback-ms says not to retry", last);
    case RetryVerdict::kBudgetSpent:
      if (hedging_ == nullptr) {
        state_->retry_budget_exhausted.fetch_add(1, std::memory_order_relaxed);
      }
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

void RetryInterceptor::FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods) {
  MutexLock lock(&mu_);
  // The shown attempt's context, when a call was made for it.
  grpc::ClientContext* attempt =
      shown_ == nullptr || shown_->rejected_locally ? nullptr : shown_->context.get();
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_INITIAL_METADATA) &&
      attempt != nullptr) {
    // The string_refs point into the attempt's context, which we own.
    for (const auto& entry : attempt->GetServerInitialMetadata()) {
      methods->GetRecvInitialMetadata()->insert(entry);
    }
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE)) {
    if (final_status_.ok() && shown_ != nullptr) {
      // gRPC 1.51's generated unary stubs instantiate their receive op with
      // protobuf::MessageLite, so this void* is exactly a MessageLite*.
      auto* message = static_cast<grpc::protobuf::MessageLite*>(methods->GetRecvMessage());
      grpc::Status parsed = grpc::SerializationTraits<grpc::protobuf::MessageLite>::Deserialize(
          &shown_->response, message);
      if (!parsed.ok()) {
        final_status_ = parsed;
        methods->FailHijackedRecvMessage();
      }
    } else {
      methods->FailHijackedRecvMessage();
    }
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS)) {
    *methods->GetRecvStatus() = final_status_;
    if (attempt != nullptr) {
      for (const auto& entry : attempt->GetServerTrailingMetadata()) {
        methods->GetRecvTrailingMetadata()->insert(entry);
      }
    } else if (shown_ != nullptr && shown_->rejected_locally) {
      MarkRejectedLocally(methods->GetRecvTrailingMetadata());
    }
  }
}

}  // namespace resilience
