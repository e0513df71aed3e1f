#include "src/server_interceptors/guarded_service.h"

#include <typeinfo>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/impl/rpc_service_method.h"
#include "grpcpp/support/method_handler.h"

namespace resilience {
namespace {

using grpc::internal::MethodHandler;
using grpc::internal::RpcMethod;
using grpc::internal::RpcServiceMethod;

// Reaches grpc::Service's protected GetHandler() on a service that is not
// ours: a pointer to member formed through a derived class may be applied to
// any object of the base class.
struct HandlerAccess : grpc::Service {
  static MethodHandler* Of(grpc::Service* service, int index) {
    return (service->*&HandlerAccess::GetHandler)(index);
  }
};

enum class Api { kSync, kCallback };

// Runs the user's handler, or answers a rejected call without it.
class GuardHandler final : public MethodHandler {
 public:
  GuardHandler(MethodHandler* inner, Api api, RejectedCalls* rejected)
      : inner_(inner), api_(api), rejected_(rejected) {}

  void RunHandler(const HandlerParameter& param) override {
    if (!rejected_->Take(param.server_context)) {
      inner_->RunHandler(param);
      return;
    }
    // The rejecting interceptor replaces this status with its own at
    // PRE_SEND_STATUS; this one is only what goes out if it did not.
    const grpc::Status rejected(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                "rejected by a grpc-resilience server interceptor");
    if (api_ == Api::kCallback) {
      // Every 1.51 callback handler creates the user's reactor only when the
      // request status is OK; otherwise it finishes the call with that
      // failure and no message, and releases the request itself.
      inner_->RunHandler(HandlerParameter(param.call, param.server_context, param.request,
                                          rejected, param.internal_data,
                                          param.call_requester));
      return;
    }
    // Sync: the stock handler would have destroyed the request it
    // deserialized after the user's code; generated requests are protobuf
    // messages, whose destructor is virtual from MessageLite on.
    if (param.request != nullptr) {
      static_cast<google::protobuf::MessageLite*>(param.request)->~MessageLite();
    }
    static MethodHandler* const answer =
        new grpc::internal::ErrorMethodHandler<grpc::StatusCode::RESOURCE_EXHAUSTED>(
            std::string(rejected.error_message()));
    answer->RunHandler(param);
  }

  void* Deserialize(grpc_call* call, grpc_byte_buffer* request, grpc::Status* status,
                    void** handler_data) override {
    return inner_->Deserialize(call, request, status, handler_data);
  }

 private:
  MethodHandler* const inner_;  // owned by the user's service
  const Api api_;
  RejectedCalls* const rejected_;
};

RpcMethod::RpcType TypeOf(const google::protobuf::MethodDescriptor& method) {
  if (method.client_streaming()) {
    return method.server_streaming() ? RpcMethod::BIDI_STREAMING : RpcMethod::CLIENT_STREAMING;
  }
  return method.server_streaming() ? RpcMethod::SERVER_STREAMING : RpcMethod::NORMAL_RPC;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GuardedService>> GuardedService::Create(
    grpc::Service* service, absl::string_view full_name, RejectedCalls* rejected) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot guard service \"", full_name, "\": ", why));
  };
  if (service == nullptr || rejected == nullptr) return refuse("null service or RejectedCalls");
  const google::protobuf::ServiceDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          std::string(full_name));
  if (descriptor == nullptr) {
    return refuse("no protobuf service of that name is linked into this program");
  }
  if (service->has_generic_methods()) return refuse("it has generic methods");
  if (service->has_async_methods()) {
    return refuse(
        "it has async or raw methods (the completion-queue API has no handler to guard; "
        "register it with ServerBuilder::RegisterService instead)");
  }
  if (service->has_synchronous_methods() && service->has_callback_methods()) {
    return refuse("it mixes sync and callback methods");
  }
  const Api api = service->has_callback_methods() ? Api::kCallback : Api::kSync;

  std::unique_ptr<GuardedService> guard(new GuardedService());
  guard->method_names_.reserve(descriptor->method_count());
  for (int i = 0; i < descriptor->method_count(); ++i) {
    guard->method_names_.push_back(
        absl::StrCat("/", descriptor->full_name(), "/", descriptor->method(i)->name()));
  }
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const std::string& name = guard->method_names_[i];
    MethodHandler* inner = HandlerAccess::Of(service, i);
    if (inner == nullptr) return refuse(absl::StrCat(name, " has no handler"));
    const absl::string_view type = typeid(*inner).name();
    if (absl::StrContains(type, "StreamedUnaryHandler") ||
        absl::StrContains(type, "SplitServerStreamingHandler")) {
      return refuse(absl::StrCat(name, " is a streamed-unary or split-streaming method"));
    }
    auto* method = new RpcServiceMethod(name.c_str(), TypeOf(*descriptor->method(i)),
                                        new GuardHandler(inner, api, rejected));
    if (api == Api::kCallback) method->SetServerApiType(RpcServiceMethod::ApiType::CALL_BACK);
    guard->AddMethod(method);
  }
  return guard;
}

}  // namespace resilience
