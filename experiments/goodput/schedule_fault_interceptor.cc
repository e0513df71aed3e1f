#include "experiments/goodput/schedule_fault_interceptor.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace goodput {
namespace {

using grpc::experimental::InterceptionHookPoints;

}  // namespace

void ScheduleFaultInterceptor::Decide(grpc::experimental::InterceptorBatchMethods* methods) {
  if (call_verdicts_.IsRejected(info_->server_context())) return;  // throttled
  auto* metadata = methods->GetRecvInitialMetadata();
  auto run = metadata->find(kRunMetadataKey);
  auto tick_text = metadata->find(kTickMetadataKey);
  if (run == metadata->end() || tick_text == metadata->end()) return;
  int64_t tick = 0;
  const absl::string_view text(tick_text->second.data(), tick_text->second.size());
  if (!absl::SimpleAtoi(text, &tick) || tick < 0) {
    status_ = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           absl::StrCat(info_->method(), ": ", kTickMetadataKey,
                                        ": not a tick (milliseconds >= 0): \"", text, "\""));
  } else {
    const absl::StatusCode code =
        faults_.Serve(absl::string_view(run->second.data(), run->second.size()), tick);
    if (code == absl::StatusCode::kOk) return;
    status_ = grpc::Status(static_cast<grpc::StatusCode>(code),
                           absl::StrCat(info_->method(), ": scheduled failure at tick ", tick));
  }
  replace_status_ = true;
  call_verdicts_.Reject(info_->server_context());
}

ScheduleFaultInterceptor::~ScheduleFaultInterceptor() {
  if (replace_status_) call_verdicts_.Forget(info_->server_context());
}

void ScheduleFaultInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    Decide(methods);
  }
  if (replace_status_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    methods->ModifySendStatus(status_);
  }
  methods->Proceed();
}

}  // namespace goodput
