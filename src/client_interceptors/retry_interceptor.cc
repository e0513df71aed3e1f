#include "grpc_resilience/internal/client_interceptors/retry_interceptor.h"

#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/support/log.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpc_resilience/internal/client_interceptors/breaker_interceptor.h"
#include "grpc_resilience/internal/client_interceptors/call_handoff.h"
#include "grpc_resilience/internal/client_interceptors/local_status.h"
#include "grpc_resilience/internal/client_interceptors/stub_kind.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

// The value of trailer `key` in `trailers`, if there.
std::optional<grpc::string_ref> Trailer(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers, const char* key) {
  auto it = trailers.find(grpc::string_ref(key, std::strlen(key)));
  if (it == trailers.end()) return std::nullopt;
  return it->second;
}

// Whether the call came from a protobuf generated stub (stub_kind.h), the
// only stubs whose receive buffer is known to be a protobuf::MessageLite.
bool FromGeneratedStub(const char* method, ClientMethodState& state) {
  if (state.generated_stub_name.load(std::memory_order_acquire) == method) return true;
  if (!state.protobuf_method || !internal::InReadOnlyStaticStorage(method)) return false;
  state.generated_stub_name.store(method, std::memory_order_release);
  return true;
}

}  // namespace

grpc::experimental::Interceptor* RetryInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  internal::SetRetryTookCall(false);
  // gRPC 1.51 bug: with a factory returning nullptr before this one, an
  // attempt's chain starts at the wrong index and would re-create this
  // interceptor for its own attempt, recursing forever. Never wrap an attempt.
  if (internal::CreatingAttempt() != nullptr) return nullptr;
  ClientMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr) return nullptr;
  state->calls.fetch_add(1, std::memory_order_relaxed);
  if (info->type() != ClientRpcInfo::Type::UNARY || !state->wraps_unary) return nullptr;
  if (!FromGeneratedStub(info->method(), *state)) {
    state->not_retried_stub_calls.fetch_add(1, std::memory_order_relaxed);
    if (!state->reported_stub_pass_through.exchange(true)) {
      gpr_log(GPR_ERROR,
              "grpc-resilience: %s: a unary call that does not come from a protobuf generated "
              "stub (e.g. a GenericStub) is passed through without retries; its timeouts and "
              "breaker still apply",
              info->method());
    }
    return nullptr;
  }
  internal::SetRetryTookCall(true);
  return new RetryInterceptor(info, state);
}

RetryInterceptor::RetryInterceptor(grpc::experimental::ClientRpcInfo* info,
                                   ClientMethodState* state)
    : info_(info), state_(state), method_(info->method()) {}

void RetryInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) {
    grpc::ClientContext* attempt = nullptr;
    grpc::Alarm* alarm = nullptr;
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
      attempt = attempt_context_.get();
      alarm = backoff_alarm_.get();
    }
    // Outside the lock: either may complete inline and call back into us.
    // Neither object can go away meanwhile: with cancelled_ set nothing
    // replaces them, and this interceptor lives as long as the caller's
    // context, on which TryCancel() is running.
    if (attempt != nullptr) attempt->TryCancel();
    if (alarm != nullptr) alarm->Cancel();
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

void RetryInterceptor::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  meter_.Begin(*state_);
  methods_ = methods;
  metadata_ = *methods->GetSendInitialMetadata();
  request_ = *methods->GetSerializedSendMessage();  // a reference-counted copy
  // gRPC's meaning of the policy's `timeout`: the call's deadline is the
  // earlier of the caller's and call start + timeout.
  const auto caller_deadline = info_->client_context()->deadline();
  if (caller_deadline != std::chrono::system_clock::time_point::max()) {
    overall_deadline_ = absl::FromChrono(caller_deadline);
  }
  const absl::Time start = absl::Now();
  if (const std::optional<absl::Duration>& timeout = state_->policy->timeout;
      timeout.has_value() && start + *timeout < overall_deadline_) {
    overall_deadline_ = start + *timeout;
    deadline_source_ = DeadlineSource::kPolicy;
  }
  stub_ = std::make_shared<grpc::GenericStub>(
      std::shared_ptr<grpc::ChannelInterface>(methods->GetInterceptedChannel().release()));
  StartAttempt();
}

void RetryInterceptor::StartAttempt() {
  grpc::ClientContext* attempt = nullptr;
  internal::AttemptInfo info;  // copied by the attempt's breaker factory
  {
    MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    if (cancelled_) {
      Finish(CancelledStatus(method_, ""));
    } else if (now >= overall_deadline_) {
      Finish(CallDeadlineStatus(method_, deadline_source_,
                                state_->policy->timeout.value_or(absl::ZeroDuration()), attempts_));
    } else {
      state_->attempts.fetch_add(1, std::memory_order_relaxed);
      attempt_reader_.reset();  // before its context
      attempt_context_ = std::make_unique<grpc::ClientContext>();
      attempt = attempt_context_.get();
      for (const auto& [key, value] : metadata_) attempt->AddMetadata(key, value);
      if (attempts_ > 0) {
        const std::string previous = absl::StrCat(attempts_);
        attempt->AddMetadata(kPreviousAttemptsKey, previous);
        attempt->AddMetadata(kRetryAttemptKey, previous);
      }
      // The caller's compression request is in its metadata, copied above.
      grpc::ClientContext* caller = info_->client_context();
      if (caller->credentials() != nullptr) attempt->set_credentials(caller->credentials());
      attempt_deadline_ = overall_deadline_;
      attempt_info_.per_attempt_deadline = false;
      if (const std::optional<absl::Duration>& limit = state_->retry.per_attempt_timeout;
          limit.has_value() && now + *limit < overall_deadline_) {
        attempt_deadline_ = now + *limit;
        attempt_info_.per_attempt_deadline = true;
      }
      info = attempt_info_;
      if (attempt_deadline_ != absl::InfiniteFuture()) {
        attempt->set_deadline(absl::ToChronoTime(attempt_deadline_));
      }
      if (const std::optional<bool>& wait = state_->policy->wait_for_ready; wait.has_value()) {
        attempt->set_wait_for_ready(*wait);
      }
      response_.Clear();
    }
  }
  if (attempt == nullptr) {
    methods_->Hijack();  // last use of `this`
    return;
  }
  // The attempt's interceptors are created inside PrepareUnaryCall(), on
  // this thread. Once Finish() is called the attempt may complete and
  // destroy `this`: hold the stub (and with it the channel) in a local, and
  // touch no member after.
  std::shared_ptr<grpc::GenericStub> stub = stub_;
  internal::SetCreatingAttempt(&info);
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader =
      stub->PrepareUnaryCall(attempt, method_, request_, AttemptCompletionQueue::Global().cq());
  internal::SetCreatingAttempt(nullptr);
  grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call = reader.get();
  {
    MutexLock lock(&mu_);
    attempt_reader_ = std::move(reader);
  }
  call->StartCall();
  call->Finish(&response_, &attempt_status_, static_cast<AttemptCompletionQueue::Tag*>(this));
}

void RetryInterceptor::Done(bool /*ok: always true for a unary Finish()*/) {
  OnAttemptDone(std::move(attempt_status_));
}

std::optional<absl::Duration> RetryInterceptor::NextRetry(grpc::Status status) {
  const RetrySettings& retry = state_->retry;
  const grpc::StatusCode code = status.error_code();
  const absl::StatusCode absl_code = static_cast<absl::StatusCode>(code);
  if (status.ok()) {
    state_->budget->RecordSuccess();
    Finish(std::move(status));
    return std::nullopt;
  }
  // Local state only: RejectedLocally() recognises the breaker's own
  // trailer, never one a server sent.
  const bool local_rejection = RejectedLocally(*attempt_context_);
  // The attempt's deadline passed (a server that answers DEADLINE_EXCEEDED
  // early, for its own reasons, is just a server answer).
  const bool expired =
      code == grpc::StatusCode::DEADLINE_EXCEEDED && absl::Now() >= attempt_deadline_;
  if (expired && !attempt_info_.per_attempt_deadline) {
    Finish(CallDeadlineStatus(method_, deadline_source_,
                              state_->policy->timeout.value_or(absl::ZeroDuration()), attempts_));
    return std::nullopt;
  }
  if (expired) {
    state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
    status = PerAttemptTimeoutStatus(method_, *retry.per_attempt_timeout, attempts_,
                                     retry.max_attempts);
  }
  if (!local_rejection && retry.IsRetryable(absl_code)) state_->budget->RecordFailure();

  if (cancelled_) {
    Finish(CancelledStatus(method_, ""));
    return std::nullopt;
  }
  if (local_rejection || !retry.IsRetryable(absl_code) || attempts_ >= retry.max_attempts) {
    Finish(std::move(status));
    return std::nullopt;
  }
  std::optional<absl::Duration> delay;
  if (std::optional<grpc::string_ref> pushback =
          Trailer(attempt_context_->GetServerTrailingMetadata(), kPushbackKey)) {
    int64_t ms = -1;
    const char* end = pushback->data() + pushback->size();
    auto [ptr, error] = std::from_chars(pushback->data(), end, ms);
    if (error != std::errc() || ptr != end || ms < 0) {
      // A negative or malformed pushback means: do not retry.
      state_->pushback_stops.fetch_add(1, std::memory_order_relaxed);
      Finish(NotRetriedStatus(method_, attempts_,
                              "the server's grpc-retry-pushback-ms says not to retry", status));
      return std::nullopt;
    }
    delay = absl::Milliseconds(ms);
  }
  if (!state_->budget->AllowRetry()) {
    state_->retry_budget_exhausted.fetch_add(1, std::memory_order_relaxed);
    Finish(NotRetriedStatus(method_, attempts_,
                            "the channel's retry budget for this method is spent", status));
    return std::nullopt;
  }
  if (!delay.has_value()) delay = state_->backoff->Delay(attempts_);
  // Do not start a backoff that cannot end before the overall deadline.
  if (absl::Now() + *delay >= overall_deadline_) {
    Finish(NotRetriedStatus(
        method_, attempts_,
        absl::StrCat("a retry after ", absl::FormatDuration(*delay),
                     " could not start before the call's deadline"),
        status));
    return std::nullopt;
  }
  return delay;
}

void RetryInterceptor::OnAttemptDone(grpc::Status status) {
  grpc::Alarm* alarm = nullptr;
  absl::Duration delay;
  {
    MutexLock lock(&mu_);
    ++attempts_;
    std::optional<absl::Duration> next = NextRetry(std::move(status));
    if (next.has_value()) {
      state_->retries.fetch_add(1, std::memory_order_relaxed);
      backoff_alarm_ = std::make_unique<grpc::Alarm>();
      alarm = backoff_alarm_.get();
      delay = *next;
    }
  }
  if (alarm == nullptr) {
    methods_->Hijack();  // last use of `this`
    return;
  }
  // Set outside the lock: a due alarm may run its callback inline. A cancel
  // that came in between finds cancelled_ set when the alarm fires.
  alarm->Set(absl::ToChronoTime(absl::Now() + delay), [this](bool fired) {
    if (fired) {
      StartAttempt();
      return;
    }
    {
      MutexLock lock(&mu_);
      Finish(CancelledStatus(method_, " during a retry backoff"));
    }
    methods_->Hijack();  // last use of `this`
  });
}

void RetryInterceptor::Finish(grpc::Status status) { final_status_ = std::move(status); }

void RetryInterceptor::FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods) {
  MutexLock lock(&mu_);
  grpc::ClientContext* attempt = attempt_context_.get();
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
      grpc::ByteBuffer copy = response_;  // Deserialize() consumes its input
      grpc::Status parsed =
          grpc::SerializationTraits<grpc::protobuf::MessageLite>::Deserialize(&copy, message);
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
    }
  }
}

}  // namespace resilience
