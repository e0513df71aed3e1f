#include "src/server_interceptors/drain_interceptor.h"

#include "absl/strings/str_cat.h"
#include "src/grpc_common/metadata_keys.h"
#include "src/server_interceptors/throttle_interceptor.h"

namespace resilience {

using grpc::experimental::InterceptionHookPoints;

grpc::experimental::Interceptor* MakeDrainInterceptor(ServerResilienceImpl& resilience,
                                                      grpc::experimental::ServerRpcInfo* info) {
  // The first factory of ours: a call the throttle rejects on arrival gets
  // no interceptor at all (its guard answers it; it runs no user code, so a
  // drain has nothing to wait for).
  if (DecideOnArrival(resilience, info, resilience.draining())) return nullptr;
  return new DrainInterceptor(info, resilience);
}

DrainInterceptor::DrainInterceptor(grpc::experimental::ServerRpcInfo* info,
                                   ServerResilienceImpl& resilience)
    : info_(info), resilience_(resilience), refuse_(resilience.draining()) {
  if (!refuse_) resilience_.open_calls_.fetch_add(1, std::memory_order_acq_rel);
}

DrainInterceptor::~DrainInterceptor() {
  if (refuse_) {
    resilience_.call_verdicts().Forget(info_->server_context());
  } else {
    const auto type = info_->type();
    if (resilience_.draining() &&
        (type == grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING ||
         type == grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING)) {
      resilience_.stream_ended_while_draining_.store(true, std::memory_order_release);
    }
    resilience_.open_calls_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void DrainInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (refuse_) {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      resilience_.call_verdicts().Reject(info_->server_context());
      // At the end of the drain: answered once the GOAWAY is out.
      if (resilience_.Park(methods)) return;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat(info_->method(), ": server shutting down; try again (another server)")));
      methods->GetSendTrailingMetadata()->emplace(
          kPushbackKey, absl::StrCat(absl::ToInt64Milliseconds(kDrainPushback)));
    }
  }
  methods->Proceed();
}

}  // namespace resilience
