#include "src/server_interceptors/drain_stage.h"

#include "absl/strings/str_cat.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

void DrainStage::Open() {
  if (refuse_ || open_) return;
  open_ = true;
  drainer_.OpenCall();
}

DrainStage::~DrainStage() {
  if (refuse_) {
    verdicts_.Forget(info_->server_context());
  } else if (open_) {
    const auto type = info_->type();
    drainer_.CloseCall(type == grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING ||
                       type == grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING);
  }
}

bool DrainStage::Arrive(grpc::experimental::InterceptorBatchMethods* methods) {
  verdicts_.Reject(info_->server_context());
  // At the end of the drain: answered once the GOAWAY is out.
  return drainer_.Park(methods);
}

void DrainStage::SendStatus(grpc::experimental::InterceptorBatchMethods* methods) {
  methods->ModifySendStatus(grpc::Status(
      grpc::StatusCode::UNAVAILABLE,
      absl::StrCat(info_->method(), ": server shutting down; try again (another server)")));
  methods->GetSendTrailingMetadata()->emplace(
      kPushbackKey, absl::StrCat(absl::ToInt64Milliseconds(kDrainPushback)));
}

}  // namespace resilience
