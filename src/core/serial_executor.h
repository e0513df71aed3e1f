// File: src/core/serial_executor.h
//
// One thread that runs posted jobs one at a time, in the order posted: where
// the library runs the application's event listeners, so that they never run
// under a lock of the library nor on a thread that must not block.

#ifndef GRPC_RESILIENCE_SRC_CORE_SERIAL_EXECUTOR_H_
#define GRPC_RESILIENCE_SRC_CORE_SERIAL_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"

namespace resilience {

// SerialExecutor
//
// Post() queues a job and returns at once; one thread, started by the first
// Post(), runs the jobs in the order they were posted, one at a time, with no
// lock held (a job may block, Post(), Flush() or read pending()). A job that
// blocks delays the jobs after it, never the poster.
//
// Shutdown: the destructor runs every job that is queued (and those that
// jobs post meanwhile), then joins the thread: nothing posted is dropped. It
// must not run on the executor's own thread (from a job), which would wait
// for itself; it aborts with a message instead of deadlocking.
//
// Flush() returns once every job posted before it ran. Called from the
// executor's thread (a job, e.g. an event listener that flushes), it cannot
// wait for the jobs queued behind the running one: it returns false at once
// instead of deadlocking, and those jobs run after the current one returns.
//
// Used by the client's breaker events (one process-wide executor,
// BreakerEventQueue) and the server's throttle events (one per
// ServerResilience). This class is thread-safe.
class SerialExecutor {
 public:
  SerialExecutor() = default;
  ~SerialExecutor() ABSL_LOCKS_EXCLUDED(mu_);
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Post()
  //
  // Runs `job` on the executor's thread after the jobs posted before it.
  // Never runs it on the caller's thread, never waits for a job.
  void Post(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_);

  // Flush()
  //
  // Waits until every job posted before this call ran, and returns true.
  // On the executor's own thread returns false at once (see above).
  bool Flush() ABSL_LOCKS_EXCLUDED(mu_);

  // The jobs posted and not finished yet (the running one included).
  size_t pending() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  bool OnExecutorThread() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return runner_ == std::this_thread::get_id();
  }

  mutable Mutex mu_;
  // Signalled when a job is posted or the executor stops.
  CondVar work_;
  // Signalled when a job finished.
  CondVar finished_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  // Jobs ever posted and ever finished: they run in order, so every job
  // posted before Flush() ran once `finished_count_` reaches the
  // `posted_count_` Flush() saw.
  uint64_t posted_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t finished_count_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
  // thread_'s id, kept while the destructor joins (thread_ is moved out).
  std::thread::id runner_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_SERIAL_EXECUTOR_H_
