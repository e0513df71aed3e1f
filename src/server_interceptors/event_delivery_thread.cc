#include "src/server_interceptors/event_delivery_thread.h"

#include <utility>

namespace resilience {

EventDeliveryThread::~EventDeliveryThread() {
  std::thread thread;
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
    thread.swap(thread_);
  }
  if (thread.joinable()) thread.join();
}

void EventDeliveryThread::Post(ThrottleEvent event) {
  MutexLock lock(&mu_);
  queue_.push_back(std::move(event));
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Run(); });
  }
  cv_.Signal();
}

void EventDeliveryThread::Flush() {
  MutexLock lock(&mu_);
  while (!queue_.empty() || delivering_) delivered_.Wait(&mu_);
}

size_t EventDeliveryThread::pending() const {
  MutexLock lock(&mu_);
  return queue_.size() + (delivering_ ? 1 : 0);
}

void EventDeliveryThread::Run() {
  mu_.Lock();
  for (;;) {
    while (queue_.empty() && !stop_) cv_.Wait(&mu_);
    // Stopping: what is queued is still delivered.
    if (queue_.empty()) break;
    ThrottleEvent event = std::move(queue_.front());
    queue_.pop_front();
    delivering_ = true;
    // The listener runs with no lock held: it may block, or call back
    // into the library (even Post()).
    mu_.Unlock();
    listener_->OnThrottleSaturation(event);
    mu_.Lock();
    delivering_ = false;
    delivered_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace resilience
