#include "src/client_interceptors/retried_unary_call.h"

#include <cstring>

#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/client_callback.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/shadow_bulkhead.h"

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The completion queue of this thread's blocking retried calls: made on
// the thread's first one, reused by the next (a per-thread resource, no
// state of any call), shut down and drained when the thread exits.
grpc::CompletionQueue* ThisThreadsQueue() {
  struct Queue {
    grpc::CompletionQueue cq;
    ~Queue() {
      cq.Shutdown();
      void* tag;
      bool ok;
      while (cq.Next(&tag, &ok)) {
      }
    }
  };
  thread_local Queue queue;
  return &queue.cq;
}

}  // namespace

RetriedUnaryCall::RetriedUnaryCall(grpc::experimental::ClientRpcInfo* info,
                                   std::shared_ptr<ClientMethodState> state,
                                   const CallEnvironment& env)
    : info_(info),
      state_(std::move(state)),
      env_(env),
      breaker_(*state_),
      method_(info->method()),
      hedging_(state_->hedging_decider.get()),
      fallback_(env.fallbacks, *state_),
      counters_(*state_, *env.clock) {}

RetriedUnaryCall::~RetriedUnaryCall() = default;

void RetriedUnaryCall::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) {
    Cancel();
    return;  // no Proceed() for a cancel
  }
  if (methods_ == nullptr &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    Start(methods);
    return;  // no Proceed(): the call is hijacked when its result is known
  }
  // The re-entry after Hijack().
  if (!fallback_ran_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS)) {
    RunFallback();
  }
  FillHijackedReceive(methods);
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    // A call that fell back counts as the end it met (fallbacks_total says
    // how it was answered).
    counters_.CallEnded(static_cast<int>(fallback_.fell_back()
                                             ? original_code_
                                             : methods->GetRecvStatus()->error_code()));
  }
  methods->Proceed();
}

void RetriedUnaryCall::Cancel() {
  std::vector<grpc::ClientContext*> attempts;
  grpc::Alarm* alarm = nullptr;
  grpc::Alarm* wait_alarm = nullptr;
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
    for (const auto& a : attempts_) {
      if (!a->ended && a->context.has_value()) attempts.push_back(&*a->context);
    }
    if (live_timer_ != nullptr) alarm = &live_timer_->alarm;
    if (wait_timer_ != nullptr && wait_set_ && !wait_over_) wait_alarm = &wait_timer_->alarm;
  }
  // Outside the lock: either may complete inline and call back into us.
  // Neither object can go away meanwhile: attempts and timers live as long
  // as this interceptor, which lives as long as the caller's context, on
  // which TryCancel() is running; with cancelled_ set no new one is made.
  for (grpc::ClientContext* attempt : attempts) attempt->TryCancel();
  if (alarm != nullptr) env_.timers->Cancel(alarm);
  if (wait_alarm != nullptr) env_.timers->Cancel(wait_alarm);
}

void RetriedUnaryCall::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  counters_.CallStarted();
  methods_ = methods;
  caller_blocks_ = internal::CallerBlocks(methods);
  if (!caller_blocks_) {
    caller_queue_ = internal::CallerQueue(methods);
    callback_attempts_ = caller_queue_ == nullptr && internal::CallerUsesCallbacks(methods);
  }
  if (const auto* caller = methods->GetSendInitialMetadata(); !caller->empty()) {
    metadata_ = *caller;
  }
  breaker_.ReadCriticality(metadata_);
  request_ = *methods->GetSerializedSendMessage();  // a reference-counted copy
  // gRPC's meaning of the policy's `timeout`: the call's deadline is the
  // earlier of the caller's and call start + timeout.
  const auto caller_deadline = info_->client_context()->deadline();
  if (caller_deadline != std::chrono::system_clock::time_point::max()) {
    call_deadline_ = absl::FromChrono(caller_deadline);
  }
  deadlines_.method = method_;
  deadlines_.call_limit = state_->policy->timeout.value_or(absl::ZeroDuration());
  deadlines_.attempt_limit = state_->retry.per_attempt_timeout.value_or(absl::ZeroDuration());
  deadlines_.max_attempts = state_->retry.max_attempts;
  if (const std::optional<absl::Duration>& timeout = state_->policy->timeout;
      timeout.has_value()) {
    const absl::Time by_policy = env_.clock->WallNow() + *timeout;
    if (by_policy < call_deadline_) {
      call_deadline_ = by_policy;
      deadlines_.source = DeadlineSource::kPolicy;
    }
  }
  channel_ = methods->GetInterceptedChannel();
  if (caller_blocks_) {
    // This thread polls its own queue, as a blocking call would: attempts
    // and timers complete here, without waking another thread.
    cq_ = ThisThreadsQueue();
  } else {
    cq_ = AttemptCompletionQueue::Global().cq();
  }
  Actions actions;
  {
    MutexLock lock(&mu_);
    outstanding_ = 1;  // this function's, until its Release()
    if (state_->bulkhead != nullptr) {
      EnterBulkhead(actions);
    } else {
      Begin(actions);
    }
  }
  Execute(actions);
  DeliverEvents();
  if (state_->bulkhead != nullptr) {
    // The wait's timer is set now: cancel it if the grant or the caller's
    // cancellation came before (they could not).
    grpc::Alarm* cancel = nullptr;
    {
      MutexLock lock(&mu_);
      if (wait_timer_ != nullptr && !wait_set_) {
        wait_set_ = true;
        if ((granted_ || cancelled_) && !wait_over_) cancel = &wait_timer_->alarm;
      }
    }
    if (cancel != nullptr) env_.timers->Cancel(cancel);
  }
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
    if (!cq_->Next(&tag, &ok)) break;  // never: the queue lives as long as its thread
    static_cast<AttemptCompletionQueue::Tag*>(tag)->Done(ok);
  }
  {
    // A grant that came meanwhile may still be cancelling the timer.
    MutexLock lock(&mu_);
    while (grant_pending_) grant_done_.Wait(&mu_);
  }
  // Every attempt and timer of this call has had its event: the queue is
  // empty for the thread's next call.
  LeaveBulkhead();
  methods_->Hijack();  // last use of `this`
}

void RetriedUnaryCall::OnSlotGranted() {
  grpc::Alarm* cancel = nullptr;
  {
    MutexLock lock(&mu_);
    granted_ = true;
    if (wait_set_ && !wait_over_) cancel = &wait_timer_->alarm;
  }
  // Its event starts the call (WaitEnded()).
  if (cancel != nullptr) env_.timers->Cancel(cancel);
  bool last;
  {
    MutexLock lock(&mu_);
    grant_pending_ = false;
    if (caller_blocks_) {
      grant_done_.SignalAll();
      return;  // the caller's thread completes the call
    }
    last = outstanding_ == 0;
  }
  if (last) {
    LeaveBulkhead();
    methods_->Hijack();  // last use of `this`
  }
}

void RetriedUnaryCall::LeaveBulkhead() {
  bool holds, queued;
  {
    MutexLock lock(&mu_);
    holds = holds_slot_;
    holds_slot_ = false;
    queued = shadow_queued_;
    shadow_queued_ = false;
  }
  if (holds) state_->bulkhead->Leave();  // may start a waiting call, here
  // Shadow: a slot handed over meanwhile is given back; a wait that would
  // have ended first was a rejection.
  if (queued) EndShadowBulkhead(*state_->bulkhead, slot_wait_, counters_);
}

void RetriedUnaryCall::Release() {
  bool last;
  {
    MutexLock lock(&mu_);
    last = --outstanding_ == 0 && !grant_pending_;
  }
  // A blocking caller's own loop hijacks (it holds one count until then).
  if (last) {
    LeaveBulkhead();
    methods_->Hijack();  // last use of `this`
  }
}

void RetriedUnaryCall::OnAttemptDone(Attempt* attempt) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    Ended(*attempt, actions);
  }
  Execute(actions);
  DeliverEvents();
  Release();  // the attempt's count; may be the last use of `this`
}

void RetriedUnaryCall::OnTimer(Timer* timer, bool fired) {
  Actions actions;
  {
    MutexLock lock(&mu_);
    if (timer == wait_timer_) {
      WaitEnded(actions);
    } else if (timer == live_timer_ && !finished_) {
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
        ApplyHedgeStep(hedging_->OnTimer(hedge_, env_.clock->WallNow(), call_deadline_), shown_,
                       AttemptOutcome(), actions);
      } else if (cancelled_ && InFlight() == 0) {
        // Waiting out a pushback delay with nothing in flight.
        AttemptOutcome outcome;
        outcome.code = absl::StatusCode::kCancelled;
        outcome.cancelled = true;
        ++hedge_.in_flight;  // OnAttemptEnd() counts an end
        ApplyHedgeStep(hedging_->OnAttemptEnd(hedge_, outcome, env_.clock->WallNow(),
                                              call_deadline_),
                       nullptr, outcome, actions);
      }
    }
  }
  Execute(actions);
  DeliverEvents();
  Release();  // the timer's count; may be the last use of `this`
}

void RetriedUnaryCall::Execute(const Actions& actions) {
  for (grpc::ClientContext* context : actions.cancel) context->TryCancel();
  if (actions.cancel_timer != nullptr) env_.timers->Cancel(actions.cancel_timer);
  if (actions.arm != nullptr) {
    env_.timers->Set(&actions.arm->alarm, cq_, actions.arm->at,
                     static_cast<AttemptCompletionQueue::Tag*>(actions.arm));
  }
  for (Attempt* attempt : actions.send) {
    // The endpoint's own channel when the router picked one.
    grpc::ChannelInterface* channel =
        attempt->route.channel != nullptr ? attempt->route.channel.get() : channel_.get();
    // kAttemptSuffix: should gRPC hand this attempt to our factory again,
    // it stays out (grpc_internals.h).
    if (callback_attempts_) {
      grpc::internal::CallbackUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel,
          grpc::internal::RpcMethod(method_, internal::kAttemptSuffix,
                                    grpc::internal::RpcMethod::NORMAL_RPC),
          &*attempt->context, &request_, &attempt->response,
          [attempt](grpc::Status status) {
            attempt->status = std::move(status);
            attempt->Done(true);
          });
      continue;
    }
    grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
        grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
            channel, caller_queue_ != nullptr ? caller_queue_ : cq_,
            grpc::internal::RpcMethod(method_, internal::kAttemptSuffix,
                                      grpc::internal::RpcMethod::NORMAL_RPC),
            &*attempt->context, request_);
    attempt->reader.reset(call);  // destroyed before its context
    call->StartCall();
    // On an async caller's queue the attempt ends in on_caller_queue (its
    // Finish() tag is then never seen); CallerQueue() is null wherever
    // Route() cannot.
    if (caller_queue_ != nullptr) attempt->on_caller_queue.Route(call);
    call->Finish(&attempt->response, &attempt->status,
                 static_cast<AttemptCompletionQueue::Tag*>(attempt));
  }
}

void RetriedUnaryCall::FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods) {
  MutexLock lock(&mu_);
  // The shown attempt's context, when a call was made for it.
  grpc::ClientContext* attempt =
      shown_ == nullptr || shown_->rejected_locally ? nullptr : &*shown_->context;
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_INITIAL_METADATA) &&
      attempt != nullptr) {
    // The string_refs point into the attempt's context, which we own.
    for (const auto& entry : attempt->GetServerInitialMetadata()) {
      methods->GetRecvInitialMetadata()->insert(entry);
    }
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE)) {
    if (fallback_.fell_back()) {
      // Its answer; a status other than OK carries no message.
      if (!fallback_.status().ok() || !fallback_.ParseInto(methods->GetRecvMessage())) {
        methods->FailHijackedRecvMessage();
      }
    } else if (final_status_.ok() && shown_ != nullptr) {
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
    *methods->GetRecvStatus() = fallback_.fell_back() ? fallback_.status() : final_status_;
    if (fallback_.fell_back()) FallbackStage::MarkFellBack(methods->GetRecvTrailingMetadata());
    if (attempt != nullptr) {
      for (const auto& entry : attempt->GetServerTrailingMetadata()) {
        methods->GetRecvTrailingMetadata()->insert(entry);
      }
    } else if (shown_ != nullptr && shown_->rejected_locally) {
      MarkRejectedLocally(methods->GetRecvTrailingMetadata());
    } else if (bulkhead_rejected_) {
      MarkRejectedLocally(methods->GetRecvTrailingMetadata(), LocalRejector::kBulkhead);
    }
  }
}

}  // namespace resilience
