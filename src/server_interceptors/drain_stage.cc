#include "src/server_interceptors/drain_stage.h"

#include "absl/strings/str_cat.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

void DrainStage::Open() {
  if (refuse_ || open_) return;
  open_ = true;
  resilience_.open_calls_.fetch_add(1, std::memory_order_acq_rel);
}

DrainStage::~DrainStage() {
  if (refuse_) {
    resilience_.call_verdicts().Forget(info_->server_context());
  } else if (open_) {
    const auto type = info_->type();
    if (resilience_.draining() &&
        (type == grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING ||
         type == grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING)) {
      resilience_.stream_ended_while_draining_.store(true, std::memory_order_release);
    }
    resilience_.open_calls_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

bool DrainStage::Arrive(grpc::experimental::InterceptorBatchMethods* methods) {
  resilience_.call_verdicts().Reject(info_->server_context());
  // At the end of the drain: answered once the GOAWAY is out.
  return resilience_.Park(methods);
}

void DrainStage::SendStatus(grpc::experimental::InterceptorBatchMethods* methods) {
  methods->ModifySendStatus(grpc::Status(
      grpc::StatusCode::UNAVAILABLE,
      absl::StrCat(info_->method(), ": server shutting down; try again (another server)")));
  methods->GetSendTrailingMetadata()->emplace(
      kPushbackKey, absl::StrCat(absl::ToInt64Milliseconds(kDrainPushback)));
}

}  // namespace resilience
