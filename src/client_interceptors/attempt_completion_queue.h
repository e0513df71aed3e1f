// File: src/client_interceptors/attempt_completion_queue.h
//
// Where the retry interceptor's attempts complete: one completion queue with
// its own thread, instead of the callback API.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_COMPLETION_QUEUE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_COMPLETION_QUEUE_H_

#include <thread>

#include "grpcpp/completion_queue.h"

namespace resilience {

// AttemptCompletionQueue
//
// Why: gRPC 1.51 runs a callback-API completion on its executor threads, so
// an attempt made with the callback API finished on one thread and then woke
// the caller's: two thread switches per retried call (client_chain_bench:
// 0.86-0.91 of a bare channel). A completion queue whose thread is itself
// polling usually picks the attempt's completion up without a wake-up.
//
// Tags given to the queue must be Tag*; Done() runs on the queue's thread
// and must be short and must not block. This class is thread-safe; Global()
// is never destroyed (its thread polls for the life of the process).
class AttemptCompletionQueue {
 public:
  class Tag {
   public:
    virtual ~Tag() = default;
    virtual void Done(bool ok) = 0;
  };

  static AttemptCompletionQueue& Global();

  grpc::CompletionQueue* cq() { return &cq_; }

 private:
  AttemptCompletionQueue();
  void Run();

  grpc::CompletionQueue cq_;
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_COMPLETION_QUEUE_H_
