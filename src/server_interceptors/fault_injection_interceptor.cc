#include "src/server_interceptors/fault_injection_interceptor.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "src/grpc_common/status_conversion.h"

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

}  // namespace

grpc::experimental::Interceptor* FaultInjectionInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (!state_->any_fault_injection()) return nullptr;
  ServerMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr || state->fault == nullptr) return nullptr;
  return new FaultInjectionInterceptor(info, state, state_->executor(), state_->rejected_calls());
}

FaultInjectionInterceptor::~FaultInjectionInterceptor() {
  if (replace_status_) rejected_calls_.Remove(info_->server_context());
}

void FaultInjectionInterceptor::Reject(grpc::Status status) {
  replace_status_ = true;
  status_ = std::move(status);
  rejected_calls_.Add(info_->server_context());
}

bool FaultInjectionInterceptor::Decide(grpc::experimental::InterceptorBatchMethods* methods) {
  // The throttle decides first; a call it rejected is never delayed.
  if (rejected_calls_.Contains(info_->server_context())) return false;
  const FaultInjectionSettings& fault = *state_->fault;
  if (fault.abort_fraction > 0 && state_->fault_random->NextUniform() < fault.abort_fraction) {
    state_->faults_aborted.fetch_add(1, std::memory_order_relaxed);
    Reject(grpc::Status(static_cast<grpc::StatusCode>(fault.abort_code),
                        absl::StrCat(info_->method(), ": fault injected (",
                                     StatusCodeName(static_cast<grpc::StatusCode>(fault.abort_code)),
                                     ")")));
    return false;
  }
  if (fault.delay <= absl::ZeroDuration() || fault.delay_fraction <= 0 ||
      state_->fault_random->NextUniform() >= fault.delay_fraction) {
    return false;
  }
  state_->faults_delayed.fetch_add(1, std::memory_order_relaxed);
  // The alarm is a member, so it lives until the call ends, which cannot be
  // before Proceed(). It only times the delay: its callback runs on gRPC's
  // internal executor, where a sync handler must not run (see
  // ProceedExecutor), so it hands the Proceed() over.
  alarm_.Set(absl::ToChronoTime(absl::Now() + fault.delay), [this, methods](bool /*fired*/) {
    executor_.Run([this, methods] { Resume(methods); });
  });
  return true;
}

void FaultInjectionInterceptor::Resume(grpc::experimental::InterceptorBatchMethods* methods) {
  if (info_->server_context()->deadline() <= std::chrono::system_clock::now()) {
    // The client gave up during the delay: don't let the handler work.
    state_->expired_while_delayed.fetch_add(1, std::memory_order_relaxed);
    Reject(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        absl::StrCat(info_->method(), ": deadline passed during an injected delay")));
  }
  methods->Proceed();
}

void FaultInjectionInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (!decided_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    decided_ = true;
    if (Decide(methods)) return;  // Proceed() comes from the alarm
  }
  if (replace_status_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    methods->ModifySendStatus(status_);
  }
  methods->Proceed();
}

}  // namespace resilience
