// The floors of any retry and any breaker that work as client interceptors
// on gRPC 1.51 (docs/retry-cost.md): an interceptor that hijacks each call
// and either re-issues it, on the blocking caller's own thread, or answers
// it UNAVAILABLE at once, with nothing else (no breaker, no timer, no
// metadata copy, no retry decision, no backoff). For sync stubs of protobuf
// services only; a benchmark baseline, not a library piece.
//
// Two settings make the floors docs/retry-cost.md compares the chain with:
//  - max_attempts: 1 re-issues the call once (the success-path floor);
//    more re-issue an attempt that ended UNAVAILABLE, at once, up to that
//    many attempts (the floor of a retry under failures).
//  - reuse_cq: each attempt on a new completion queue (as the retry
//    interceptor does), or on one queue per caller thread, made on the
//    thread's first attempt and kept (a thread_local).

#ifndef GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_

#include <memory>
#include <optional>

#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_interceptor.h"

namespace resilience::bench {

struct HijackFloorOptions {
  // Re-issue the call; false: answer it UNAVAILABLE.
  bool reissue = true;
  // Attempts at most; an attempt is re-issued only when it ended UNAVAILABLE.
  int max_attempts = 1;
  // One completion queue per caller thread instead of one per attempt.
  bool reuse_cq = false;
};

// ThreadCompletionQueue
//
// The completion queue of the calling thread, made on its first use and
// shut down (and drained) when the thread ends. Only ever polled by its
// thread, for one operation at a time.
class ThreadCompletionQueue {
 public:
  static grpc::CompletionQueue& Get() {
    thread_local ThreadCompletionQueue queue;
    return queue.cq_;
  }

  ThreadCompletionQueue(const ThreadCompletionQueue&) = delete;
  ThreadCompletionQueue& operator=(const ThreadCompletionQueue&) = delete;

 private:
  ThreadCompletionQueue() = default;
  ~ThreadCompletionQueue() {
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  grpc::CompletionQueue cq_;
};

class HijackOnceInterceptor final : public grpc::experimental::Interceptor {
 public:
  HijackOnceInterceptor(grpc::experimental::ClientRpcInfo* info, HijackFloorOptions options)
      : info_(info), options_(options) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (!started_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      started_ = true;
      if (options_.reissue) {
        Reissue(methods);
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
  // Calls of the caller's method past this interceptor until one does not
  // end UNAVAILABLE or max_attempts were made; the last one's response and
  // status are the call's.
  void Reissue(grpc::experimental::InterceptorBatchMethods* methods) {
    const grpc::ByteBuffer request = *methods->GetSerializedSendMessage();
    const std::unique_ptr<grpc::ChannelInterface> channel = methods->GetInterceptedChannel();
    for (int attempt = 1;; ++attempt) {
      if (options_.reuse_cq) {
        RunAttempt(*channel, request, ThreadCompletionQueue::Get());
      } else {
        grpc::CompletionQueue cq;
        RunAttempt(*channel, request, cq);
        cq.Shutdown();
        void* tag;
        bool ok;
        while (cq.Next(&tag, &ok)) {
        }
      }
      if (status_.error_code() != grpc::StatusCode::UNAVAILABLE ||
          attempt >= options_.max_attempts) {
        return;
      }
    }
  }

  // One attempt on `cq`, which this thread polls until the attempt ends.
  void RunAttempt(grpc::ChannelInterface& channel, const grpc::ByteBuffer& request,
                  grpc::CompletionQueue& cq) {
    reader_.reset();  // the previous attempt's, before its context
    attempt_.reset();
    attempt_.emplace();
    attempt_->set_deadline(info_->client_context()->deadline());
    response_.Clear();
    grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
        grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
            &channel, &cq,
            grpc::internal::RpcMethod(info_->method(), nullptr,
                                      grpc::internal::RpcMethod::NORMAL_RPC),
            &*attempt_, request);
    reader_.reset(call);
    call->StartCall();
    call->Finish(&response_, &status_, this);
    void* tag = nullptr;
    bool ok = false;
    while (tag != this && cq.Next(&tag, &ok)) {
    }
  }

  grpc::experimental::ClientRpcInfo* const info_;
  const HijackFloorOptions options_;
  bool started_ = false;
  std::optional<grpc::ClientContext> attempt_;
  // In the attempt's call arena: declared after its context, destroyed first.
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader_;
  grpc::ByteBuffer response_;
  grpc::Status status_;
};

class HijackOnceFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit HijackOnceFactory(HijackFloorOptions options) : options_(options) {}
  // `reissue`: re-issue each call once, on a new queue; otherwise answer it
  // UNAVAILABLE.
  explicit HijackOnceFactory(bool reissue) : options_{reissue, 1, false} {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    // The attempt's own chain starts past this factory (its interceptor
    // position), so it never sees the attempts.
    return new HijackOnceInterceptor(info, options_);
  }

 private:
  const HijackFloorOptions options_;
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
