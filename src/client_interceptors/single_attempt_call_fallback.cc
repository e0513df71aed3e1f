// The fallback of a SingleAttemptCall (FallbackStage): a refused call's
// answer in its rejection's hijack, a failed call's at POST_RECV_STATUS.

#include "grpc/support/log.h"
#include "src/client_interceptors/call_plan.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/single_attempt_call.h"

namespace resilience {

using grpc::experimental::ClientRpcInfo;

void SingleAttemptCall::PrepareFallback(grpc::experimental::InterceptorBatchMethods* methods) {
  // Only a generated stub's unary call has a receive buffer we can fill.
  if (info_->type() != ClientRpcInfo::Type::UNARY || !fallback_.Available() ||
      !FromGeneratedStub(info_->method(), state_)) {
    return;
  }
  fallback_possible_ = true;
  request_ = *methods->GetSerializedSendMessage();  // a reference-counted copy
  // The caller's receive buffer, when this batch receives (a unary call's
  // one batch; an async caller that read the initial metadata first
  // receives in a later one, taken in Intercept()).
  recv_message_ = methods->GetRecvMessage();
}

void SingleAttemptCall::RunRejectionFallback() {
  fallback_ran_ = true;
  // A call cancelled while it waited for a slot has no rejector: it never
  // falls back.
  if (!fallback_possible_ || !rejector_.has_value()) return;
  const FallbackCause cause =
      *rejector_ == LocalRejector::kBulkhead ? FallbackCause::kBulkhead : FallbackCause::kBreaker;
  if (fallback_.Run(cause, request_, rejection_, cancelled_.load())) counters_.FellBack(cause);
}

void SingleAttemptCall::FallBackOnFailure(grpc::experimental::InterceptorBatchMethods* methods,
                                          grpc::Status* status) {
  // The call went out: its end is answered here, after everything else saw
  // the original status. The caller's own cancellation never falls back
  // (our timer's does: it is a deadline of ours).
  const bool caller_cancelled = cancelled_.load() && !timeout_.fired();
  if (recv_message_ == nullptr || !fallback_.Run(std::nullopt, request_, *status, caller_cancelled)) {
    return;
  }
  if (fallback_.status().ok()) {
    // The caller must take the message written into its buffer
    // (grpc_internals.h); a build that cannot keeps the failure.
    if (!internal::AcceptFilledMessage(methods)) {
      if (!state_.reported_fallback_limit.exchange(true)) {
        gpr_log(GPR_ERROR,
                "grpc-resilience: %s: a fallback's OK answer cannot replace the failure of a call "
                "that went out on this gRPC build (no retryPolicy: the call is not hijacked); "
                "the call keeps its status",
                info_->method());
      }
      return;
    }
    if (!fallback_.ParseInto(recv_message_)) {
      *status = fallback_.status();
      return;
    }
  }
  *status = fallback_.status();
  FallbackStage::MarkFellBack(methods->GetRecvTrailingMetadata());
  counters_.FellBack(fallback_.cause());
}

}  // namespace resilience
