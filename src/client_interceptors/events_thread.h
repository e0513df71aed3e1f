// File: src/client_interceptors/events_thread.h
//
// Where the client chain runs the application's event listener when the
// thread that caused the event must not block.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_EVENTS_THREAD_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_EVENTS_THREAD_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"

namespace resilience {

// EventsThread
//
// One thread that runs posted jobs one at a time, in the order posted. The
// AttemptCompletionQueue's thread (where the attempts of async and callback
// callers complete) and gRPC's callback threads must not run user code that
// may block: their calls post the delivery of breaker events here instead
// (BreakerEventQueue::DeliverOnEventsThread()). A job that blocks delays the
// jobs after it, never a call. Thread-safe; Global() is started on first use
// and never destroyed.
class EventsThread {
 public:
  static EventsThread& Global();

  void Post(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  EventsThread();
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  Mutex mu_;
  CondVar wake_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_EVENTS_THREAD_H_
