#include "src/client_interceptors/breaker_event_queue.h"

#include <utility>

#include "src/core/serial_executor.h"

namespace resilience {

void BreakerEventQueue::Push(BreakerEvent event) {
  MutexLock lock(&mu_);
  queue_.push_back(std::move(event));
  pending_.fetch_add(1, std::memory_order_release);
}

void BreakerEventQueue::Deliver() {
  {
    MutexLock lock(&mu_);
    if (delivering_) return;  // that thread delivers ours too
    delivering_ = true;
  }
  for (;;) {
    BreakerEvent event;
    {
      MutexLock lock(&mu_);
      if (queue_.empty()) {
        delivering_ = false;
        return;
      }
      event = std::move(queue_.front());
      queue_.pop_front();
      pending_.fetch_sub(1, std::memory_order_release);
    }
    listener_->OnBreakerTransition(event);  // outside every lock
  }
}

namespace {

// The events thread: one for the process, started on first use, never
// destroyed (channels, and their queues, may outlive static destruction).
SerialExecutor& EventsExecutor() {
  static SerialExecutor* const executor = new SerialExecutor();
  return *executor;
}

}  // namespace

void BreakerEventQueue::PostToEventsThread(std::function<void()> job) {
  EventsExecutor().Post(std::move(job));
}

void BreakerEventQueue::DeliverOnEventsThread() {
  EventsExecutor().Post([self = shared_from_this()] { self->Deliver(); });
}

}  // namespace resilience
