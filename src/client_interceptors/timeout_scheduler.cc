#include "src/client_interceptors/timeout_scheduler.h"

#include "absl/time/clock.h"

namespace resilience {

TimeoutScheduler& TimeoutScheduler::Global() {
  static TimeoutScheduler* const scheduler = new TimeoutScheduler();  // never destroyed
  return *scheduler;
}

TimeoutScheduler::TimeoutScheduler() : thread_([this] { Run(); }) {}

TimeoutScheduler::~TimeoutScheduler() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

void TimeoutScheduler::Schedule(absl::Time when, std::function<void()> callback) {
  bool earliest;
  {
    MutexLock lock(&mu_);
    earliest = heap_.empty() || when < heap_.top().when;
    heap_.push(Entry{when, std::move(callback)});
  }
  // Only an entry that moves the next wake-up earlier needs the thread.
  if (earliest) cv_.Signal();
}

void TimeoutScheduler::Run() {
  std::vector<std::function<void()>> due;
  mu_.Lock();
  while (!stopping_) {
    const absl::Time now = absl::Now();
    while (!heap_.empty() && heap_.top().when <= now) {
      // priority_queue::top() is const; the entry is popped right after.
      due.push_back(std::move(const_cast<Entry&>(heap_.top()).callback));
      heap_.pop();
    }
    if (!due.empty()) {
      mu_.Unlock();
      for (std::function<void()>& callback : due) callback();
      due.clear();
      mu_.Lock();
      continue;
    }
    if (heap_.empty()) {
      cv_.Wait(&mu_);
    } else {
      cv_.WaitWithTimeout(&mu_, heap_.top().when - now);
    }
  }
  mu_.Unlock();
}

}  // namespace resilience
