#include "src/core/timeout_scheduler.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace resilience {

TimeoutScheduler& TimeoutScheduler::Global() {
  static TimeoutScheduler* const scheduler = new TimeoutScheduler();  // never destroyed
  return *scheduler;
}

TimeoutScheduler::TimeoutScheduler(Clock& clock) : clock_(clock), thread_([this] { Run(); }) {}

TimeoutScheduler::~TimeoutScheduler() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  thread_.join();
}

void TimeoutScheduler::Place(size_t slot, Timer* timer) {
  heap_[slot] = timer;
  timer->slot_ = slot;
}

void TimeoutScheduler::SiftUp(size_t slot) {
  Timer* timer = heap_[slot];
  while (slot > 0) {
    const size_t parent = (slot - 1) / 2;
    if (heap_[parent]->when_ <= timer->when_) break;
    Place(slot, heap_[parent]);
    slot = parent;
  }
  Place(slot, timer);
}

void TimeoutScheduler::SiftDown(size_t slot) {
  Timer* timer = heap_[slot];
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * slot + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1]->when_ < heap_[child]->when_) ++child;
    if (timer->when_ <= heap_[child]->when_) break;
    Place(slot, heap_[child]);
    slot = child;
  }
  Place(slot, timer);
}

void TimeoutScheduler::Remove(Timer* timer) {
  const size_t slot = timer->slot_;
  timer->slot_ = Timer::kNotPending;
  Timer* last = heap_.back();
  heap_.pop_back();
  if (last == timer) return;
  Place(slot, last);
  SiftDown(slot);
  SiftUp(last->slot_);
}

void TimeoutScheduler::Schedule(Timer* timer, absl::Time when) {
  bool earliest;
  {
    MutexLock lock(&mu_);
    timer->when_ = when;
    heap_.push_back(timer);
    timer->slot_ = heap_.size() - 1;
    SiftUp(timer->slot_);
    earliest = timer->slot_ == 0;
  }
  // Only a timer that moves the next wake-up earlier needs the thread.
  if (earliest) wake_.Signal();
}

bool TimeoutScheduler::Cancel(Timer* timer) {
  MutexLock lock(&mu_);
  if (timer->slot_ != Timer::kNotPending) {
    // If it was the earliest, the thread wakes at its old time, finds
    // nothing due and sleeps again: cheaper than waking it now.
    Remove(timer);
    return true;
  }
  if (std::this_thread::get_id() != thread_.get_id()) {
    while (firing_ == timer) fired_.Wait(&mu_);
  }
  return false;
}

size_t TimeoutScheduler::pending() {
  MutexLock lock(&mu_);
  return heap_.size();
}

uint64_t TimeoutScheduler::wakeups() {
  MutexLock lock(&mu_);
  return wakeups_;
}

void TimeoutScheduler::Run() {
  mu_.Lock();
  while (!stopping_) {
    if (heap_.empty()) {
      wake_.Wait(&mu_);
      ++wakeups_;
      continue;
    }
    const absl::Time now = clock_.Now();
    Timer* earliest = heap_[0];
    if (earliest->when_ > now) {
      // when_ - now is in (0, InfiniteDuration()]; never hand the condition
      // variable more than kMaxSleep (see the class comment).
      wake_.WaitWithTimeout(&mu_, std::min(earliest->when_ - now, kMaxSleep));
      ++wakeups_;
      continue;
    }
    Remove(earliest);
    firing_ = earliest;
    mu_.Unlock();
    earliest->Fire();
    mu_.Lock();
    firing_ = nullptr;
    fired_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace resilience
