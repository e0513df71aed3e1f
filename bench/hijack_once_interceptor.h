// The floors of any retry and any breaker that work as client interceptors
// on gRPC 1.51 (docs/retry-cost.md): an interceptor that hijacks each call
// and either re-issues it (on the blocking caller's own thread, or, for an
// async or callback caller, where `completion` says), or answers it
// UNAVAILABLE at once, with nothing else (no breaker, no timer, no metadata
// copy, no retry decision, no backoff). For unary calls of protobuf services
// only; a benchmark baseline, not a library piece.
//
// The settings that make the floors docs/retry-cost.md compares the chain with:
//  - max_attempts: 1 re-issues the call once (the success-path floor);
//    more re-issue an attempt that ended UNAVAILABLE, at once, up to that
//    many attempts (the floor of a retry under failures).
//  - reuse_cq: each attempt on a new completion queue (as the retry
//    interceptor does), or on one queue per caller thread, made on the
//    thread's first attempt and kept (a thread_local).
//  - completion: where attempts complete. kCallerThread blocks the caller
//    (for sync stubs only). An async or callback caller must not be
//    blocked, so its floor hijacks, returns, and calls Hijack() when the
//    last attempt ended, from where that attempt completed: gRPC's callback
//    threads (kCallbackApi: attempts made with the callback API), or the
//    thread of one completion queue of the floor's own (kOwnCqThread, as
//    the chain's AttemptCompletionQueue does).

#ifndef GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_

#include <array>
#include <memory>
#include <optional>
#include <thread>

#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_callback.h"
#include "grpcpp/support/client_interceptor.h"

namespace resilience::bench {

struct HijackFloorOptions {
  // Re-issue the call; false: answer it UNAVAILABLE.
  bool reissue = true;
  // Attempts at most; an attempt is re-issued only when it ended UNAVAILABLE.
  int max_attempts = 1;
  // One completion queue per caller thread instead of one per attempt
  // (kCallerThread only).
  bool reuse_cq = false;
  enum class Completion { kCallerThread, kCallbackApi, kOwnCqThread };
  Completion completion = Completion::kCallerThread;
};

// The most attempts a floor makes.
inline constexpr int kFloorMaxAttempts = 3;

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

// FloorCompletionQueue
//
// The kOwnCqThread floors' queue: one for the process, polled by a thread of
// its own that runs each tag's Done(). Never destroyed.
class FloorCompletionQueue {
 public:
  class Tag {
   public:
    virtual ~Tag() = default;
    virtual void Done() = 0;
  };

  static grpc::CompletionQueue& Get() {
    static FloorCompletionQueue* const queue = new FloorCompletionQueue();
    return queue->cq_;
  }

 private:
  FloorCompletionQueue() : thread_([this] { Run(); }) {}
  void Run() {
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) static_cast<Tag*>(tag)->Done();
  }

  grpc::CompletionQueue cq_;
  std::thread thread_;
};

class HijackOnceInterceptor final : public grpc::experimental::Interceptor,
                                    private FloorCompletionQueue::Tag {
 public:
  HijackOnceInterceptor(grpc::experimental::ClientRpcInfo* info, HijackFloorOptions options)
      : info_(info), options_(options) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (!started_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      started_ = true;
      if (options_.reissue &&
          options_.completion != HijackFloorOptions::Completion::kCallerThread) {
        StartNonBlocking(methods);
        return;  // Hijack() once the last attempt ended
      }
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

  // A non-blocking caller's floor: the request and the channel kept, the
  // first attempt issued; the caller's thread returns.
  void StartNonBlocking(grpc::experimental::InterceptorBatchMethods* methods) {
    methods_ = methods;
    request_ = *methods->GetSerializedSendMessage();
    channel_ = methods->GetInterceptedChannel();
    IssueNonBlocking();
  }

  // One attempt, with a context of its own (kept until the call ends: the
  // previous attempt's may still be referred to by its completion).
  void IssueNonBlocking() {
    grpc::ClientContext& context = contexts_[attempts_++].emplace();
    context.set_deadline(info_->client_context()->deadline());
    response_.Clear();
    const grpc::internal::RpcMethod method(info_->method(), nullptr,
                                           grpc::internal::RpcMethod::NORMAL_RPC);
    if (options_.completion == HijackFloorOptions::Completion::kCallbackApi) {
      grpc::internal::CallbackUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel_.get(), method, &context, &request_, &response_, [this](grpc::Status status) {
            status_ = std::move(status);
            Done();
          });
      return;
    }
    grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* call =
        grpc::internal::ClientAsyncResponseReaderHelper::Create<grpc::ByteBuffer>(
            channel_.get(), &FloorCompletionQueue::Get(), method, &context, request_);
    readers_[attempts_ - 1].reset(call);
    call->StartCall();
    call->Finish(&response_, &status_, static_cast<FloorCompletionQueue::Tag*>(this));
  }

  // A non-blocking caller's attempt ended: re-issue it or end the call.
  void Done() override {
    if (status_.error_code() == grpc::StatusCode::UNAVAILABLE &&
        attempts_ < options_.max_attempts) {
      IssueNonBlocking();
      return;
    }
    methods_->Hijack();  // the call completes; may be the last use of `this`
  }

  grpc::experimental::ClientRpcInfo* const info_;
  const HijackFloorOptions options_;
  bool started_ = false;
  // A non-blocking caller's floor (completion != kCallerThread).
  grpc::experimental::InterceptorBatchMethods* methods_ = nullptr;
  grpc::ByteBuffer request_;
  std::unique_ptr<grpc::ChannelInterface> channel_;
  int attempts_ = 0;
  std::array<std::optional<grpc::ClientContext>, kFloorMaxAttempts> contexts_;
  // In the attempts' call arenas: declared after their contexts.
  std::array<std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>>,
             kFloorMaxAttempts>
      readers_;
  std::optional<grpc::ClientContext> attempt_;
  // In the attempt's call arena: declared after its context, destroyed first.
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader_;
  grpc::ByteBuffer response_;
  grpc::Status status_;
};

class HijackOnceFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit HijackOnceFactory(HijackFloorOptions options) : options_(options) {
    if (options_.max_attempts > kFloorMaxAttempts) options_.max_attempts = kFloorMaxAttempts;
  }
  // `reissue`: re-issue each call once, on a new queue; otherwise answer it
  // UNAVAILABLE.
  explicit HijackOnceFactory(bool reissue)
      : options_{reissue, 1, false, HijackFloorOptions::Completion::kCallerThread} {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    // The attempt's own chain starts past this factory (its interceptor
    // position), so it never sees the attempts.
    return new HijackOnceInterceptor(info, options_);
  }

 private:
  HijackFloorOptions options_;
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_HIJACK_ONCE_INTERCEPTOR_H_
