#include "src/client_interceptors/timeout_interceptor.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "src/client_interceptors/timeout_scheduler.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

}  // namespace

grpc::experimental::Interceptor* TimeoutInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  ClientMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr) return nullptr;
  // Retried unary calls: the retry interceptor applies both per attempt.
  if (info->type() == ClientRpcInfo::Type::UNARY && state->wraps_unary) return nullptr;
  if (!state->policy->timeout.has_value() && !state->policy->deadline.has_value()) {
    return nullptr;
  }
  auto* interceptor = new TimeoutInterceptor(info, state);
  internal::HandOffTimeoutFlag(interceptor->flag());  // for this call's breaker
  return interceptor;
}

TimeoutInterceptor::~TimeoutInterceptor() {
  // A timer that fired may still be inside Fire() on the scheduler's thread
  // (when the call completed within TryCancel()): Cancel() waits for it.
  if (armed_ || flag_.fired.load()) TimeoutScheduler::Global().Cancel(this);
}

void TimeoutInterceptor::Disarm() {
  if (!armed_) return;
  armed_ = false;
  TimeoutScheduler::Global().Cancel(this);
}

void TimeoutInterceptor::Fire() {
  flag_.fired.store(true);
  // Runs PRE_SEND_CANCEL through the call's interceptors, then cancels it;
  // does not block. Nothing of `this` is touched after it: the call may
  // complete inside it.
  info_->client_context()->TryCancel();
}

void TimeoutInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    // The per-attempt timeout, or the default deadline when the caller set
    // none and it comes first.
    const std::optional<absl::Duration>& timeout = state_->policy->timeout;
    const std::optional<absl::Duration>& deadline = state_->policy->deadline;
    const bool caller_has_deadline =
        info_->client_context()->deadline() != std::chrono::system_clock::time_point::max();
    bool per_attempt = timeout.has_value();
    limit_ = timeout.value_or(absl::InfiniteDuration());
    if (deadline.has_value() && !caller_has_deadline && *deadline < limit_) {
      limit_ = *deadline;
      per_attempt = false;
    }
    if (limit_ == absl::InfiniteDuration()) {
      methods->Proceed();
      return;
    }
    flag_.per_attempt.store(per_attempt);
    armed_ = true;
    TimeoutScheduler::Global().Schedule(this, absl::Now() + limit_);
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    Disarm();  // after this, flag_ no longer changes
    grpc::Status* status = methods->GetRecvStatus();
    if (flag_.fired.load() && status->error_code() == grpc::StatusCode::CANCELLED) {
      const bool per_attempt = flag_.per_attempt.load();
      if (per_attempt) state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
      *status = grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          absl::StrCat(info_->method(), per_attempt ? ": per-attempt timeout of " : ": deadline of ",
                       absl::FormatDuration(limit_), " exceeded"));
    }
  }
  methods->Proceed();
}

}  // namespace resilience
