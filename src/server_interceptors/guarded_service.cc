#include "src/server_interceptors/guarded_service.h"

#include <algorithm>
#include <string>
#include <typeinfo>
#include <utility>

#include "src/core/clock.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message_lite.h"
#include "grpc/grpc.h"
#include "grpcpp/impl/codegen/server_callback_handlers.h"
#include "grpcpp/impl/rpc_service_method.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/method_handler.h"
#include "src/grpc_common/metadata_keys.h"

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

// How often a held call checks whether it has ended (cancelled by its client
// or by a server shutdown). Its deadline is waited for exactly.
constexpr absl::Duration kHoldPoll = absl::Milliseconds(5);

// The answer of a call rejected on arrival, taken from `verdicts` (named by
// the call's core call, which its context holds on the callback API): its
// trailers go on the context, its status is returned.
grpc::Status TakeAnswer(CallVerdicts& verdicts, grpc::CallbackServerContext* context) {
  Verdict verdict = verdicts.Take(context->c_call());
  context->AddTrailingMetadata(kPushbackKey, verdict.pushback_ms);
  if (verdict.load_report.has_value()) {
    context->AddTrailingMetadata(kReadableLoadReportKey, *verdict.load_report);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(verdict.code), std::move(verdict.message));
}

// A reactor of the streaming call types that finishes with the call's
// answer as soon as it is made: gRPC's own FinishOnlyReactor, placed in the
// call's arena as gRPC places it (its OnDone() only destroys it).
template <typename Reactor>
Reactor* FinishingReactor(CallVerdicts& verdicts, grpc::CallbackServerContext* context) {
  using Finishing = grpc::internal::FinishOnlyReactor<Reactor>;
  return new (grpc_call_arena_alloc(context->c_call(), sizeof(Finishing)))
      Finishing(TakeAnswer(verdicts, context));
}

using grpc::ByteBuffer;

// The callback API's handler of a call rejected on arrival
// (CallVerdicts::RejectOnArrival()), for the method's call type: the request,
// if any, is taken as bytes (never parsed), and the reactor finishes with the
// rejection's status at once; for a unary call the context's DefaultReactor,
// which gRPC runs inline (no hop to its executor, unlike the stock failure
// path's reactor). The answer is the call's verdict in `verdicts`, taken by
// the reactor's maker (gRPC gives it the context alone).
std::unique_ptr<MethodHandler> AnswerHandler(RpcMethod::RpcType type, CallVerdicts* verdicts) {
  switch (type) {
    case RpcMethod::NORMAL_RPC:
      return std::make_unique<grpc::internal::CallbackUnaryHandler<ByteBuffer, ByteBuffer>>(
          [verdicts](grpc::CallbackServerContext* context, const ByteBuffer*, ByteBuffer*) {
            grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
            reactor->Finish(TakeAnswer(*verdicts, context));
            return reactor;
          });
    case RpcMethod::CLIENT_STREAMING:
      return std::make_unique<
          grpc::internal::CallbackClientStreamingHandler<ByteBuffer, ByteBuffer>>(
          [verdicts](grpc::CallbackServerContext* context, ByteBuffer*) {
            return FinishingReactor<grpc::ServerReadReactor<ByteBuffer>>(*verdicts, context);
          });
    case RpcMethod::SERVER_STREAMING:
      return std::make_unique<
          grpc::internal::CallbackServerStreamingHandler<ByteBuffer, ByteBuffer>>(
          [verdicts](grpc::CallbackServerContext* context, const ByteBuffer*) {
            return FinishingReactor<grpc::ServerWriteReactor<ByteBuffer>>(*verdicts, context);
          });
    case RpcMethod::BIDI_STREAMING:
      return std::make_unique<grpc::internal::CallbackBidiHandler<ByteBuffer, ByteBuffer>>(
          [verdicts](grpc::CallbackServerContext* context) {
            return FinishingReactor<grpc::ServerBidiReactor<ByteBuffer, ByteBuffer>>(*verdicts,
                                                                                    context);
          });
  }
  return nullptr;
}

// Runs the user's handler, answers a rejected call without it, or holds a
// call (sync API) on the handler's own gRPC thread before running it.
class GuardHandler final : public MethodHandler {
 public:
  GuardHandler(const std::string& method, MethodHandler* inner, Api api, RpcMethod::RpcType type,
               CallVerdicts* verdicts)
      : inner_(inner),
        api_(api),
        answer_(api == Api::kCallback ? AnswerHandler(type, verdicts) : nullptr),
        verdicts_(verdicts),
        rejected_(absl::StrCat(method, ": rejected by a grpc-resilience server interceptor")),
        ended_while_held_(absl::StrCat(method, ": the call ended during an injected delay")) {}

  void RunHandler(const HandlerParameter& param) override {
    // Rejected on arrival (callback API only; its verdict is named by the
    // core call): its Deserialize() was answer_'s, and no interceptor of
    // ours rewrites the status; answer_'s reactor takes the verdict.
    if (answer_ != nullptr && verdicts_->AnsweredOnArrival(param.server_context->c_call())) {
      answer_->RunHandler(param);
      return;
    }
    Verdict verdict = verdicts_->Take(param.server_context);
    switch (verdict.kind) {
      case Verdict::kRun:
        inner_->RunHandler(param);
        return;
      case Verdict::kReject:
        Answer(param, rejected_);
        return;
      case Verdict::kHold:
        if (api_ == Api::kSync && !WaitOut(param, verdict)) {
          if (verdict.ended_while_held != nullptr) {
            verdict.ended_while_held->fetch_add(1, std::memory_order_relaxed);
          }
          Answer(param, ended_while_held_);
          return;
        }
        // The callback API never gets holds: a hold there sees no
        // cancellation wherever it is placed, so the fault interceptor's
        // alarm keeps it (docs/server-rejection.md, fact 9).
        inner_->RunHandler(param);
        return;
    }
  }

  void* Deserialize(grpc_call* call, grpc_byte_buffer* request, grpc::Status* status,
                    void** handler_data) override {
    // gRPC 1.51 deserializes a callback call's request after making its
    // interceptors: a call rejected then is known by its core call.
    if (answer_ != nullptr && verdicts_->AnsweredOnArrival(call)) {
      return answer_->Deserialize(call, request, status, handler_data);
    }
    return inner_->Deserialize(call, request, status, handler_data);
  }

 private:
  // Blocks until the hold is over (true) or the call has ended: its deadline
  // passed, holds were ended (CallVerdicts::EndHoldsAt()), or it was
  // cancelled by the client or a server shutdown (false); as
  // CallVerdicts::EndOfHold() decides.
  // Only for the sync API, whose handler threads may block; the wait is what
  // a slow handler would cost, on the thread gRPC gave the call.
  bool WaitOut(const HandlerParameter& param, const Verdict& verdict) const {
    grpc::ServerContextBase& context = *param.server_context;
    const absl::Time deadline = absl::FromChrono(context.deadline());
    for (;;) {
      // Compared with gRPC's deadline: the real wall clock gRPC enforces it on.
      const absl::Time now = Clock::Real().WallNow();
      switch (verdicts_->EndOfHold(now, verdict.hold_until, deadline, context.IsCancelled())) {
        case HoldEnd::kHeld:
          break;
        case HoldEnd::kElapsed:
          return true;
        case HoldEnd::kDeadlinePassed:
        case HoldEnd::kHoldsEnded:
        case HoldEnd::kCancelled:
          return false;
      }
      absl::SleepFor(std::min({verdict.hold_until - now, deadline - now, kHoldPoll}));
    }
  }

  // Answers the call with `answer`'s status (the interceptor that decided
  // may replace it at PRE_SEND_STATUS) and no message, without user code.
  void Answer(const HandlerParameter& param, MethodHandler& answer) {
    if (api_ == Api::kCallback) {
      // Every 1.51 callback handler creates the user's reactor only when the
      // request status is OK; otherwise it finishes the call with that
      // failure and no message, and releases the request itself.
      inner_->RunHandler(HandlerParameter(
          param.call, param.server_context, param.request,
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected"), param.internal_data,
          param.call_requester));
      return;
    }
    // Sync: the stock handler would have destroyed the request it
    // deserialized after the user's code; generated requests are protobuf
    // messages, whose destructor is virtual from MessageLite on.
    if (param.request != nullptr) {
      static_cast<google::protobuf::MessageLite*>(param.request)->~MessageLite();
    }
    answer.RunHandler(param);
  }

  MethodHandler* const inner_;  // owned by the user's service
  const Api api_;
  // Callback API: answers the calls rejected on arrival (null: sync API).
  const std::unique_ptr<MethodHandler> answer_;
  CallVerdicts* const verdicts_;
  // Sync answers: initial metadata and a status, nothing else.
  grpc::internal::ErrorMethodHandler<grpc::StatusCode::RESOURCE_EXHAUSTED> rejected_;
  grpc::internal::ErrorMethodHandler<grpc::StatusCode::DEADLINE_EXCEEDED> ended_while_held_;
};

RpcMethod::RpcType TypeOf(const google::protobuf::MethodDescriptor& method) {
  if (method.client_streaming()) {
    return method.server_streaming() ? RpcMethod::BIDI_STREAMING : RpcMethod::CLIENT_STREAMING;
  }
  return method.server_streaming() ? RpcMethod::SERVER_STREAMING : RpcMethod::NORMAL_RPC;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GuardedService>> GuardedService::Create(
    grpc::Service* service, absl::string_view full_name, CallVerdicts* verdicts) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot guard service \"", full_name, "\": ", why));
  };
  if (service == nullptr || verdicts == nullptr) return refuse("null service or CallVerdicts");
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
  // Reserved so that the names never move: each RpcServiceMethod points at one.
  guard->method_names_.reserve(descriptor->method_count());
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const std::string& name = guard->method_names_.emplace_back(
        absl::StrCat("/", descriptor->full_name(), "/", descriptor->method(i)->name()));
    MethodHandler* inner = HandlerAccess::Of(service, i);
    if (inner == nullptr) return refuse(absl::StrCat(name, " has no handler"));
    const absl::string_view type = typeid(*inner).name();
    if (absl::StrContains(type, "StreamedUnaryHandler") ||
        absl::StrContains(type, "SplitServerStreamingHandler")) {
      return refuse(absl::StrCat(name, " is a streamed-unary or split-streaming method"));
    }
    const RpcMethod::RpcType call_type = TypeOf(*descriptor->method(i));
    auto* method =
        new RpcServiceMethod(name.c_str(), call_type,
                             new GuardHandler(name, inner, api, call_type, verdicts));
    if (api == Api::kCallback) method->SetServerApiType(RpcServiceMethod::ApiType::CALL_BACK);
    guard->AddMethod(method);
  }
  return guard;
}

}  // namespace resilience
