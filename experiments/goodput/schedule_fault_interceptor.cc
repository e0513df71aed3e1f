#include "experiments/goodput/schedule_fault_interceptor.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace goodput {
namespace {

using grpc::experimental::InterceptionHookPoints;

}  // namespace

void ScheduleFaultInterceptor::Decide(grpc::experimental::InterceptorBatchMethods* methods) {
  if (call_verdicts_ != nullptr && call_verdicts_->IsRejected(info_->server_context())) {
    return;  // throttled
  }
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
  if (call_verdicts_ != nullptr) call_verdicts_->Reject(info_->server_context());
}

ScheduleFaultInterceptor::~ScheduleFaultInterceptor() {
  if (replace_status_ && call_verdicts_ != nullptr) {
    call_verdicts_->Forget(info_->server_context());
  }
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

absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> StartScheduledServer(
    ScheduledFaults& faults, cache_service::CacheServer::Options options, absl::string_view key) {
  auto slot = std::make_shared<CallVerdictsSlot>();
  options.extra_interceptors = [&faults, slot] {
    resilience::ServerInterceptorFactoryList list;
    list.push_back(std::make_unique<ScheduleFaultInterceptorFactory>(faults, slot));
    return list;
  };
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) return server.status();
  slot->verdicts.store(&(*server)->resilience().impl()->call_verdicts());
  // A Get without the run's metadata passes the fault interceptor untouched.
  if (absl::Status s = (*server)->store().Store(key, "value"); !s.ok()) return s;
  return server;
}

}  // namespace goodput
