#include "src/client_interceptors/timeout_interceptor.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

}  // namespace

grpc::experimental::Interceptor* TimeoutInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  // Unary calls: the retry interceptor applies the timeout per attempt.
  if (info->type() == ClientRpcInfo::Type::UNARY) return nullptr;
  ClientMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr || !state->policy->timeout.has_value()) return nullptr;
  auto flag = std::make_shared<internal::TimeoutFlag>();
  internal::HandOffTimeoutFlag(flag);  // for this call's breaker
  return new TimeoutInterceptor(info, state, std::move(flag));
}

TimeoutInterceptor::TimeoutInterceptor(grpc::experimental::ClientRpcInfo* info,
                                       ClientMethodState* state,
                                       std::shared_ptr<internal::TimeoutFlag> flag)
    : info_(info), state_(state), shared_(std::make_shared<Shared>()) {
  shared_->flag = std::move(flag);
}

TimeoutInterceptor::~TimeoutInterceptor() {
  MarkDone();
  alarm_.Cancel();
}

void TimeoutInterceptor::MarkDone() {
  MutexLock lock(&shared_->mu);
  shared_->done = true;
  shared_->context = nullptr;
}

void TimeoutInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    {
      MutexLock lock(&shared_->mu);
      shared_->context = info_->client_context();
    }
    std::shared_ptr<Shared> shared = shared_;
    alarm_.Set(absl::ToChronoTime(absl::Now() + *state_->policy->timeout),
               [shared](bool fired) {
                 if (!fired) return;  // cancelled: the call ended first
                 MutexLock lock(&shared->mu);
                 if (shared->done) return;
                 shared->flag->fired.store(true);
                 // Runs PRE_SEND_CANCEL through the call's interceptors, then
                 // cancels it; does not block.
                 shared->context->TryCancel();
               });
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    MarkDone();
    alarm_.Cancel();
    grpc::Status* status = methods->GetRecvStatus();
    if (shared_->flag->fired.load() && status->error_code() == grpc::StatusCode::CANCELLED) {
      state_->attempt_timeouts.fetch_add(1, std::memory_order_relaxed);
      *status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                             absl::StrCat(info_->method(), ": per-attempt timeout of ",
                                          absl::FormatDuration(*state_->policy->timeout),
                                          " exceeded"));
    }
  }
  methods->Proceed();
}

}  // namespace resilience
