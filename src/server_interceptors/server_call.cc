#include "src/server_interceptors/server_call.h"

#include <optional>

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

}  // namespace

std::shared_ptr<ServerMethodState> ServerCall::Lookup(
    ServerResilienceImpl& resilience, const grpc::experimental::ServerRpcInfo* info) {
  if (!resilience.any_throttle() && !resilience.any_fault_injection() && !resilience.metrics()) {
    return nullptr;
  }
  return resilience.ForMethod(info->method());
}

ServerCall::ServerCall(ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info,
                       bool decide_on_arrival)
    : info_(info),
      verdicts_(resilience.call_verdicts()),
      drain_(info, resilience.drainer(), verdicts_),
      state_(Lookup(resilience, info)),
      throttle_(info, state_.get(), resilience.clock(), verdicts_),
      fault_(info, state_.get(), resilience.executor(), verdicts_) {
  rejected_on_arrival_ = DecidesOnArrival(decide_on_arrival) && throttle_.DecideOnArrival();
  // A call rejected now runs no user code: a drain has nothing to wait for.
  if (!rejected_on_arrival_) drain_.Open();
}

bool ServerCall::DecidesOnArrival(bool decide_on_arrival) const {
  if (!decide_on_arrival || drain_.refuses() || !throttle_.enabled() || !state_->guarded) {
    return false;
  }
  // The callback API only: its guard runs for every call once the factory
  // is done (nothing else would take the verdict), and its context holds
  // the core call already (the guard's name for it, and the peer, for a
  // per-caller key). Otherwise decided by the hooks, as on the sync API.
  grpc::ServerContextBase* context = info_->server_context();
  return dynamic_cast<grpc::CallbackServerContext*>(context) != nullptr &&
         context->c_call() != nullptr;
}

ServerCall::~ServerCall() {
  if (state_ != nullptr) meter_.Abandon(*state_);  // closed without a status
}

bool ServerCall::Arrive(grpc::experimental::InterceptorBatchMethods* methods) {
  if (drain_.refuses()) return drain_.Arrive(methods);
  if (state_ == nullptr) return false;
  if (throttle_.enabled()) {
    if (!throttle_.Decide(methods->GetRecvInitialMetadata())) return false;
    meter_.Admit(*state_);
  }
  if (fault_.enabled()) {
    // Rejected by an interceptor of the application's (outer): no fault.
    if (verdicts_.IsRejected(info_->server_context()) || fault_.Aborts()) return false;
    // Admitted before a hold can hand the call to another thread.
    meter_.Admit(*state_);
    return fault_.Holds(methods);
  }
  meter_.Admit(*state_);
  return false;
}

void ServerCall::SendStatus(grpc::experimental::InterceptorBatchMethods* methods) {
  if (drain_.refuses()) {
    drain_.SendStatus(methods);
    if (state_ != nullptr) {
      meter_.StatusSent(*state_, static_cast<int>(grpc::StatusCode::UNAVAILABLE),
                        /*handler_skipped=*/true);
    }
    return;
  }
  if (state_ == nullptr) return;
  grpc::StatusCode code;
  bool handler_skipped = true;
  if (throttle_.rejected()) {
    code = throttle_.SendRejection(methods);
  } else {
    const std::optional<grpc::StatusCode> fault = fault_.SendStatus(methods);
    handler_skipped = fault.has_value();
    code = fault.has_value() ? *fault : methods->GetSendStatus().error_code();
    // With fault injection's status: the throttle learns from the answer sent.
    if (throttle_.enabled()) throttle_.SendStatus(methods, code);
  }
  meter_.StatusSent(*state_, static_cast<int>(code), handler_skipped);
}

void ServerCall::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (!arrived_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    arrived_ = true;
    if (Arrive(methods)) return;  // held: Proceed() comes later
  }
  // The call closed before its status was sent: its client cancelled it or
  // its deadline passed (IsCancelled() cannot be asked here, see above).
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_CLOSE)) {
    throttle_.Closed();
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    SendStatus(methods);
  }
  methods->Proceed();
}

}  // namespace resilience
