#include "grpc_resilience/internal/client_interceptors/retry_interceptor.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/support/log.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpc_resilience/internal/client_interceptors/call_plan.h"
#include "grpc_resilience/internal/client_interceptors/local_rejection.h"
#include "grpc_resilience/internal/client_interceptors/stub_kind.h"

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

grpc::experimental::Interceptor* MakeRetryInterceptor(ClientResilience& resilience,
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
    : info_(info), state_(state), breaker_clock_(breaker_clock), method_(info->method()) {}

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
  grpc::ClientContext* attempt = nullptr;
  grpc::Alarm* alarm = nullptr;
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
    attempt = attempt_context_.get();
    alarm = backoff_alarm_.get();
    wake_.SignalAll();
  }
  // Outside the lock: either may complete inline and call back into us.
  // Neither object can go away meanwhile: with cancelled_ set nothing
  // replaces them, and this interceptor lives as long as the caller's
  // context, on which TryCancel() is running.
  if (attempt != nullptr) attempt->TryCancel();
  if (alarm != nullptr) alarm->Cancel();
}

void RetryInterceptor::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  meter_.Begin(*state_);
  methods_ = methods;
  const bool caller_blocks = internal::CallerBlocks(methods);
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
  if (caller_blocks) {
    RunOnCallerThread();
  } else {
    StartQueuedAttempt();
  }
}

RetryInterceptor::Step RetryInterceptor::PrepareAttempt() {
  MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (cancelled_) {
    final_status_ = CancelledStatus(method_, "");
    return Step::kFinished;
  }
  if (now >= call_deadline_) {
    final_status_ = CallDeadlineStatus(method_, deadline_source_,
                                       state_->policy->timeout.value_or(absl::ZeroDuration()),
                                       attempts_);
    return Step::kFinished;
  }
  state_->attempts.fetch_add(1, std::memory_order_relaxed);
  rejected_locally_ = false;
  if (state_->breaker != nullptr) {
    admission_ = state_->breaker->Allow();
    if (!admission_.admitted()) {
      rejected_locally_ = true;
      state_->rejected_by_breaker.fetch_add(1, std::memory_order_relaxed);
      return Step::kRejected;
    }
  }
  attempt_reader_.reset();  // before its context
  attempt_context_ = std::make_unique<grpc::ClientContext>();
  grpc::ClientContext* attempt = attempt_context_.get();
  for (const auto& [key, value] : metadata_) attempt->AddMetadata(key, value);
  if (attempts_ > 0) {
    const std::string previous = absl::StrCat(attempts_);
    attempt->AddMetadata(kPreviousAttemptsKey, previous);
    attempt->AddMetadata(kRetryAttemptKey, previous);
  }
  // The caller's compression request is in its metadata, copied above.
  grpc::ClientContext* caller = info_->client_context();
  if (caller->credentials() != nullptr) attempt->set_credentials(caller->credentials());
  attempt_deadline_ = call_deadline_;
  per_attempt_deadline_ = false;
  if (const std::optional<absl::Duration>& limit = state_->retry.per_attempt_timeout;
      limit.has_value() && now + *limit < call_deadline_) {
    attempt_deadline_ = now + *limit;
    per_attempt_deadline_ = true;
  }
  if (attempt_deadline_ != absl::InfiniteFuture()) {
    attempt->set_deadline(absl::ToChronoTime(attempt_deadline_));
  }
  if (const std::optional<bool>& wait = state_->policy->wait_for_ready; wait.has_value()) {
    attempt->set_wait_for_ready(*wait);
  }
  response_.Clear();
  return Step::kSend;
}

grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* RetryInterceptor::CreateAttemptCall(
    grpc::CompletionQueue* cq) {
  grpc::ClientContext* attempt;
  {
    MutexLock lock(&mu_);
    attempt = attempt_context_.get();
  }
  // The attempt's interceptors are created in here, on this thread.
  internal::SetCreatingAttempt(true);
  grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
      grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
          channel_.get(), cq,
          grpc::internal::RpcMethod(method_, /*suffix_for_stats=*/nullptr,
                                    grpc::internal::RpcMethod::NORMAL_RPC),
          attempt, request_);
  internal::SetCreatingAttempt(false);
  MutexLock lock(&mu_);
  attempt_reader_.reset(call);  // destroyed before its context
  return call;
}

void RetryInterceptor::RunOnCallerThread() {
  for (;;) {
    const Step step = PrepareAttempt();
    if (step == Step::kFinished) break;
    grpc::Status status;
    if (step == Step::kSend) {
      // This thread polls the attempt's own queue, as a blocking call
      // would: the attempt completes here, without waking another thread.
      grpc::CompletionQueue cq;
      grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call = CreateAttemptCall(&cq);
      call->StartCall();
      call->Finish(&response_, &status, &cq);
      void* tag;
      bool ok;
      cq.Next(&tag, &ok);
      cq.Shutdown();
      while (cq.Next(&tag, &ok)) {
      }
    }
    const std::optional<absl::Duration> delay = AfterAttempt(std::move(status));
    if (!delay.has_value()) break;
    if (!WaitOnCallerThread(*delay)) {
      MutexLock lock(&mu_);
      final_status_ = CancelledStatus(method_, " during a retry backoff");
      break;
    }
  }
  methods_->Hijack();  // last use of `this`
}

bool RetryInterceptor::WaitOnCallerThread(absl::Duration delay) {
  const absl::Time until = absl::Now() + delay;
  MutexLock lock(&mu_);
  while (!cancelled_) {
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) return true;
    wake_.WaitWithTimeout(&mu_, left);
  }
  return false;
}

void RetryInterceptor::StartQueuedAttempt() {
  const Step step = PrepareAttempt();
  if (step == Step::kFinished) {
    methods_->Hijack();  // last use of `this`
    return;
  }
  if (step == Step::kRejected) {
    OnQueuedAttemptDone(grpc::Status());  // AfterAttempt() gives it the rejection status
    return;
  }
  // Once Finish() is called the attempt may complete and destroy `this`:
  // touch no member after it.
  grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
      CreateAttemptCall(AttemptCompletionQueue::Global().cq());
  call->StartCall();
  call->Finish(&response_, &attempt_status_, static_cast<AttemptCompletionQueue::Tag*>(this));
}

void RetryInterceptor::Done(bool /*ok: always true for a unary Finish()*/) {
  OnQueuedAttemptDone(std::move(attempt_status_));
}

void RetryInterceptor::OnQueuedAttemptDone(grpc::Status status) {
  const std::optional<absl::Duration> delay = AfterAttempt(std::move(status));
  if (!delay.has_value()) {
    methods_->Hijack();  // last use of `this`
    return;
  }
  grpc::Alarm* alarm;
  {
    MutexLock lock(&mu_);
    backoff_alarm_ = std::make_unique<grpc::Alarm>();
    alarm = backoff_alarm_.get();
  }
  // Set outside the lock: a due alarm may run its callback inline. A cancel
  // that came in between finds cancelled_ set when the alarm fires.
  alarm->Set(absl::ToChronoTime(absl::Now() + *delay), [this](bool fired) {
    if (fired) {
      StartQueuedAttempt();
      return;
    }
    {
      MutexLock lock(&mu_);
      final_status_ = CancelledStatus(method_, " during a retry backoff");
    }
    methods_->Hijack();  // last use of `this`
  });
}

std::optional<absl::Duration> RetryInterceptor::AfterAttempt(grpc::Status status) {
  MutexLock lock(&mu_);
  ++attempts_;
  const absl::Time now = absl::Now();
  if (rejected_locally_) {
    status = BreakerRejectionStatus(method_, state_->breaker->kind(), admission_.reason());
  }
  AttemptOutcome outcome;
  outcome.code = static_cast<absl::StatusCode>(status.error_code());
  outcome.rejected_locally = rejected_locally_;
  outcome.cancelled = cancelled_;
  outcome.deadline_passed = outcome.code == absl::StatusCode::kDeadlineExceeded &&
                            now >= attempt_deadline_ - kDeadlineSlack;
  outcome.per_attempt_deadline = per_attempt_deadline_;
  if (!rejected_locally_ && !status.ok()) {
    if (std::optional<grpc::string_ref> pushback =
            Trailer(attempt_context_->GetServerTrailingMetadata(), kPushbackKey)) {
      outcome.pushback = Pushback::Parse(absl::string_view(pushback->data(), pushback->size()));
    }
  }
  if (admission_.pending()) {
    LocalEnd end = LocalEnd::kNone;
    if (outcome.code == absl::StatusCode::kCancelled && cancelled_) {
      end = LocalEnd::kCancelledByCaller;
    } else if (outcome.deadline_passed) {
      // PrepareAttempt() never sends an attempt whose deadline has passed.
      end = per_attempt_deadline_ ? LocalEnd::kPerAttemptTimeout : LocalEnd::kCallDeadline;
    }
    admission_.Record(state_->policy->breaker.Classify(outcome.code, end),
                      breaker_clock_.Now() - admission_.start());
  }
  const RetryDecision decision =
      state_->retry_decider->Decide(attempts_, outcome, now, call_deadline_);
  if (decision.verdict == RetryVerdict::kRetry) {
    state_->retries.fetch_add(1, std::memory_order_relaxed);
    if (decision.attempt_timed_out) {
      state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
    }
    return decision.delay;
  }
  final_status_ = FinalStatus(decision, std::move(status));
  return std::nullopt;
}

grpc::Status RetryInterceptor::FinalStatus(const RetryDecision& decision, grpc::Status last) {
  if (decision.attempt_timed_out) {
    state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
    last = PerAttemptTimeoutStatus(method_, *state_->retry.per_attempt_timeout, attempts_,
                                   state_->retry.max_attempts);
  }
  switch (decision.verdict) {
    case RetryVerdict::kCallDeadline:
      return CallDeadlineStatus(method_, deadline_source_,
                                state_->policy->timeout.value_or(absl::ZeroDuration()),
                                attempts_);
    case RetryVerdict::kCancelled:
      return CancelledStatus(method_, "");
    case RetryVerdict::kPushbackStop:
      state_->pushback_stops.fetch_add(1, std::memory_order_relaxed);
      return NotRetriedStatus(method_, attempts_,
                              "the server's grpc-retry-pushback-ms says not to retry", last);
    case RetryVerdict::kBudgetSpent:
      state_->retry_budget_exhausted.fetch_add(1, std::memory_order_relaxed);
      return NotRetriedStatus(method_, attempts_,
                              "the channel's retry budget for this method is spent", last);
    case RetryVerdict::kBackoffPastDeadline:
      return NotRetriedStatus(method_, attempts_,
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
  // The last attempt's context, when a call was made for it.
  grpc::ClientContext* attempt = rejected_locally_ ? nullptr : attempt_context_.get();
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_INITIAL_METADATA) &&
      attempt != nullptr) {
    // The string_refs point into the attempt's context, which we own.
    for (const auto& entry : attempt->GetServerInitialMetadata()) {
      methods->GetRecvInitialMetadata()->insert(entry);
    }
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE)) {
    if (final_status_.ok()) {
      // gRPC 1.51's generated unary stubs instantiate their receive op with
      // protobuf::MessageLite, so this void* is exactly a MessageLite*.
      auto* message = static_cast<grpc::protobuf::MessageLite*>(methods->GetRecvMessage());
      grpc::Status parsed =
          grpc::SerializationTraits<grpc::protobuf::MessageLite>::Deserialize(&response_, message);
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
    } else if (rejected_locally_) {
      MarkRejectedLocally(methods->GetRecvTrailingMetadata());
    }
  }
}

}  // namespace resilience
