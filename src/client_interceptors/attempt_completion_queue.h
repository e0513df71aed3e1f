// File: src/client_interceptors/attempt_completion_queue.h
//
// Where the retry interceptor's timers of non-blocking callers complete (and,
// on a gRPC other than 1.51, their attempts): one completion queue with its
// own thread.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_COMPLETION_QUEUE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_COMPLETION_QUEUE_H_

#include <thread>

#include "grpcpp/completion_queue.h"

namespace resilience {

// AttemptCompletionQueue
//
// Why: an async or callback caller must not be blocked, and a grpc::Alarm's
// tag on the caller's own queue would be returned by its Next(). Attempts no
// longer come here on gRPC 1.51: a blocking caller's complete on its
// thread's queue, an async caller's on its own queue, a callback caller's on
// gRPC's callback threads (retried_unary_call.h); through this thread they
// cost a wake-up of it and then of the caller per retried call.
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
