// File: src/server_interceptors/event_delivery_thread.h
//
// Hands the server's events to the application's ResilienceEvents on a
// thread of its own, so that a listener that blocks (a log write, a lock of
// its own, a call back into the library) never holds a call: the throttle
// decides on gRPC's threads, some of which (the callback API's) must never
// block.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_EVENT_DELIVERY_THREAD_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_EVENT_DELIVERY_THREAD_H_

#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"
#include "grpc_resilience/events.h"

namespace resilience {

// EventDeliveryThread
//
// Post() queues an event and returns at once; one thread, started by the
// first Post(), delivers the events in the order they were posted, with no
// lock of the library held. The destructor delivers what is queued, then
// joins the thread. This class is thread-safe.
class EventDeliveryThread {
 public:
  explicit EventDeliveryThread(std::shared_ptr<ResilienceEvents> listener)
      : listener_(std::move(listener)) {}
  ~EventDeliveryThread() ABSL_LOCKS_EXCLUDED(mu_);
  EventDeliveryThread(const EventDeliveryThread&) = delete;
  EventDeliveryThread& operator=(const EventDeliveryThread&) = delete;

  // Post()
  //
  // `event` for OnThrottleSaturation(), delivered after the events posted
  // before it. Never blocks on the listener.
  void Post(ThrottleEvent event) ABSL_LOCKS_EXCLUDED(mu_);

  // Flush()
  //
  // Returns once every event posted before the call was delivered. Not from
  // the listener (it would wait for itself).
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);

  // The events posted and not delivered yet (the one being delivered
  // included).
  size_t pending() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<ResilienceEvents> listener_;
  mutable Mutex mu_;
  CondVar cv_;
  // Signalled when an event was delivered.
  CondVar delivered_;
  std::deque<ThrottleEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_EVENT_DELIVERY_THREAD_H_
