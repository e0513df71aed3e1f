// The floors of any retry and any breaker that work as client interceptors
// on gRPC 1.51 (docs/retry-cost.md): an interceptor that hijacks each call
// and either re-issues it once, on the blocking caller's own thread, or
// answers it UNAVAILABLE at once, with nothing else (no breaker, no timer,
// no metadata copy, no retry decision). For sync stubs of protobuf services
// only; a benchmark baseline, not a library piece.

#ifndef GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_

#include <memory>

#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_interceptor.h"

namespace resilience::bench {

class HijackOnceInterceptor final : public grpc::experimental::Interceptor {
 public:
  // `reissue`: re-issue the call once; otherwise answer it UNAVAILABLE.
  HijackOnceInterceptor(grpc::experimental::ClientRpcInfo* info, bool reissue)
      : info_(info), reissue_(reissue) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (!started_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      started_ = true;
      if (reissue_) {
        ReissueOnce(methods);
      } else {
        status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "rejected by the floor");
      }
      methods->Hijack();
      return;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE)) {
      auto* message = static_cast<grpc::protobuf::MessageLite*>(methods->GetRecvMessage());
      if (!status_.ok() ||
          !grpc::SerializationTraits<grpc::protobuf::MessageLite>::Deserialize(&response_, message)
               .ok()) {
        methods->FailHijackedRecvMessage();
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS)) {
      *methods->GetRecvStatus() = status_;
    }
    methods->Proceed();
  }

 private:
  // One call of the caller's method past this interceptor, on a queue this
  // thread polls.
  void ReissueOnce(grpc::experimental::InterceptorBatchMethods* methods) {
    grpc::ByteBuffer request = *methods->GetSerializedSendMessage();
    std::unique_ptr<grpc::ChannelInterface> channel = methods->GetInterceptedChannel();
    attempt_.set_deadline(info_->client_context()->deadline());
    grpc::CompletionQueue cq;
    grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
        grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
            channel.get(), &cq,
            grpc::internal::RpcMethod(info_->method(), nullptr,
                                      grpc::internal::RpcMethod::NORMAL_RPC),
            &attempt_, request);
    reader_.reset(call);
    call->StartCall();
    call->Finish(&response_, &status_, &cq);
    void* tag;
    bool ok;
    cq.Next(&tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }

  grpc::experimental::ClientRpcInfo* const info_;
  const bool reissue_;
  bool started_ = false;
  grpc::ClientContext attempt_;
  // In the attempt's call arena: declared after its context, destroyed first.
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader_;
  grpc::ByteBuffer response_;
  grpc::Status status_;
};

class HijackOnceFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit HijackOnceFactory(bool reissue) : reissue_(reissue) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    // The attempt's own chain starts past this factory (its interceptor
    // position), so it never sees the attempts.
    return new HijackOnceInterceptor(info, reissue_);
  }

 private:
  const bool reissue_;
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
