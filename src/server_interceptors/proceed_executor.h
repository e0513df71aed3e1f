// File: src/server_interceptors/proceed_executor.h
//
// Threads on which a server interceptor may resume a call it held back.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PROCEED_EXECUTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PROCEED_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"

namespace resilience {

// ProceedExecutor
//
// Why it exists: on gRPC 1.51's synchronous server, an interceptor's late
// Proceed() runs the handler right there, on the calling thread, and the
// handler then blocks until its response is written. A grpc::Alarm callback
// runs on gRPC's internal executor; blocking it there deadlocks the write the
// handler waits for (seen in this project's tests). So the alarm only times
// the delay and hands the Proceed() to these threads, which may block. Only
// sync services registered without a GuardedService need it: the guard holds
// sync calls on their own handler threads, and callback calls resume on the
// alarm's thread (their handler does not block).
//
// An elastic pool: a task goes to an idle thread, or to a new one while there
// are fewer than `max_threads`, else it waits in the queue. Idle threads stay
// until destruction, which runs the queued tasks and joins every thread. This
// class is thread-safe.
class ProceedExecutor {
 public:
  explicit ProceedExecutor(int max_threads = 256) : max_threads_(max_threads) {}
  ~ProceedExecutor() ABSL_LOCKS_EXCLUDED(mu_);

  ProceedExecutor(const ProceedExecutor&) = delete;
  ProceedExecutor& operator=(const ProceedExecutor&) = delete;

  // Run()
  //
  // Runs `task` soon on a pool thread. Never blocks.
  void Run(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const int max_threads_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PROCEED_EXECUTOR_H_
