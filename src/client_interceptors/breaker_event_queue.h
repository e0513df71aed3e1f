// File: src/client_interceptors/breaker_event_queue.h
//
// The breaker transitions of one channel on their way to the application's
// ResilienceEvents listener: queued where they happen, delivered after the
// library's locks are released.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_EVENT_QUEUE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_EVENT_QUEUE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"
#include "grpc_resilience/events.h"

namespace resilience {

// BreakerEventQueue
//
// A breaker calls its listener from inside Allow() / Record(), which a
// retried call makes under its own lock, and for async and callback callers
// on a thread that must not block. So the listener only Push()es; the call
// that made the Allow() / Record() calls, once it holds no lock, either
// Deliver()s on its own thread (a blocking caller's thread, which waits
// anyway) or DeliverOnEventsThread(). Events reach the listener in the order
// pushed, one at a time: only one thread delivers at once; a Deliver() that
// finds another thread delivering returns at once, and that thread delivers
// the new events too. Thread-safe.
class BreakerEventQueue : public std::enable_shared_from_this<BreakerEventQueue> {
 public:
  explicit BreakerEventQueue(std::shared_ptr<ResilienceEvents> listener)
      : listener_(std::move(listener)) {}

  // Push()
  //
  // Queues `event`. Runs no user code; may be called under locks.
  void Push(BreakerEvent event) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether events wait for delivery (cheap: one atomic load).
  bool pending() const { return pending_.load(std::memory_order_acquire) > 0; }

  // Deliver()
  //
  // Gives the queued events to the listener on this thread, unless another
  // thread is doing so. The caller must hold no lock of the library.
  void Deliver() ABSL_LOCKS_EXCLUDED(mu_);

  // DeliverOnEventsThread()
  //
  // Deliver() on the events thread, a process-wide SerialExecutor
  // (src/core/serial_executor.h) that runs deliveries in order; returns at
  // once.
  void DeliverOnEventsThread();

  // PostToEventsThread()
  //
  // Runs `job` on the events thread, after what was posted before it.
  static void PostToEventsThread(std::function<void()> job);

  // DeliverAfter()
  //
  // What a call does when it holds no lock any more: nothing when no event
  // waits, else Deliver() when `caller_may_block` (its thread is a blocking
  // caller's), else DeliverOnEventsThread().
  void DeliverAfter(bool caller_may_block) {
    if (!pending()) return;
    if (caller_may_block) {
      Deliver();
    } else {
      DeliverOnEventsThread();
    }
  }

 private:
  const std::shared_ptr<ResilienceEvents> listener_;
  Mutex mu_;
  std::deque<BreakerEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int> pending_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_EVENT_QUEUE_H_
