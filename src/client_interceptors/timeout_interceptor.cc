#include "src/client_interceptors/timeout_interceptor.h"

#include "src/client_interceptors/call_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "src/client_interceptors/local_status.h"
#include "src/client_interceptors/retry_throttle_feed.h"
#include "src/core/timeout_scheduler.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

}  // namespace

grpc::experimental::Interceptor* MakeTimeoutInterceptor(ClientResilienceImpl& resilience,
                                                        grpc::experimental::ClientRpcInfo* info) {
  const CallPlan plan = PlanCall(resilience, info);
  if (!plan.timeout) return nullptr;
  auto* interceptor = new TimeoutInterceptor(info, plan.state);
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

bool TimeoutInterceptor::CallerDeadlinePassed() const {
  const auto deadline = info_->client_context()->deadline();
  return deadline != std::chrono::system_clock::time_point::max() &&
         std::chrono::system_clock::now() >= deadline;
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
    meter_.BeginOneAttempt(*state_);
    // The policy's `timeout` (the call's deadline, gRPC's meaning) or, for a
    // unary call that is not retried, its one attempt's per-attempt timeout
    // when that is sooner. The caller's own earlier deadline needs nothing
    // from us: gRPC enforces it.
    limit_ = state_->policy->timeout.value_or(absl::InfiniteDuration());
    bool per_attempt = false;
    if (info_->type() == ClientRpcInfo::Type::UNARY &&
        state_->retry.per_attempt_timeout.value_or(absl::InfiniteDuration()) < limit_) {
      limit_ = *state_->retry.per_attempt_timeout;
      per_attempt = true;
    }
    const auto caller_deadline = info_->client_context()->deadline();
    const absl::Time due = absl::Now() + limit_;
    if (caller_deadline != std::chrono::system_clock::time_point::max() &&
        absl::FromChrono(caller_deadline) <= due) {
      methods->Proceed();
      return;
    }
    flag_.per_attempt.store(per_attempt);
    armed_ = true;
    TimeoutScheduler::Global().Schedule(this, due);
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    Disarm();  // after this, flag_ no longer changes
    grpc::Status* status = methods->GetRecvStatus();
    if (flag_.fired.load() && status->error_code() == grpc::StatusCode::CANCELLED) {
      if (flag_.per_attempt.load()) {
        state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
        *status = PerAttemptTimeoutStatus(info_->method(), limit_, 1, 1);
      } else {
        *status = CallDeadlineStatus(info_->method(), DeadlineSource::kPolicy, limit_, 0);
      }
    } else if (status->error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
               !flag_.fired.load() && CallerDeadlinePassed()) {
      *status = CallDeadlineStatus(info_->method(), DeadlineSource::kCaller, limit_, 0);
    }
    meter_.End(*state_, static_cast<int>(status->error_code()));
    FeedRetryThrottle(*state_, *info_->client_context(), methods);
    state_->reconnect->Poke(info_->channel(), status->error_code());
  }
  methods->Proceed();
}

}  // namespace resilience
