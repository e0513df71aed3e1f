// File: src/core/timeout_scheduler.h
//
// One thread that fires call timeouts, instead of a grpc::Alarm per call.

#ifndef GRPC_RESILIENCE_SRC_CORE_TIMEOUT_SCHEDULER_H_
#define GRPC_RESILIENCE_SRC_CORE_TIMEOUT_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// TimeoutScheduler
//
// Why: a grpc::Alarm per call cost about 7% of a loopback unary call's
// throughput on the 2-core test machine (client_chain_bench), mostly because
// cancelling it, which every call that finishes in time does, runs its
// callback on another thread. A first version of this class kept every
// entry until its time came; its thread then woke for every call that had
// long finished (thousands of times a second under load). Now a call that
// finishes in time cancels its timer: an O(log n) removal under the lock,
// and the thread sleeps until the earliest timer that is still pending.
//
// The algorithm: an indexed min-heap of timers (each knows its slot, so it
// can be removed); one thread sleeps until the earliest `when` (or a new,
// earlier timer arrives), then fires what is due, one at a time, outside
// the lock. Fire() must be short and must not block. Timers are owned by
// the caller, who must Cancel() a timer that was ever scheduled before
// destroying it (also after it fired: its Fire() may still be running).
//
// Any `when` is allowed, absl::InfiniteFuture() included: the thread never
// sleeps longer than kMaxSleep at once. (A wait of absl::InfiniteDuration()
// becomes nanoseconds::max() for std::condition_variable::wait_for, whose
// deadline then overflows the steady clock: the wait returns at once, and
// the thread would spin with the lock.) A timer further away than kMaxSleep
// costs one wake-up per kMaxSleep; `when` is wall-clock time and the wait is
// on the steady clock, so the bound also limits how late a timer can fire
// after the wall clock stepped forward.
// This class is thread-safe; Global() is never destroyed.
class TimeoutScheduler {
 public:
  class Timer {
   public:
    virtual ~Timer() = default;

   protected:
    // Runs on the scheduler's thread, without the scheduler's lock.
    virtual void Fire() = 0;

   private:
    friend class TimeoutScheduler;
    static constexpr size_t kNotPending = std::numeric_limits<size_t>::max();
    absl::Time when_;
    size_t slot_ = kNotPending;  // guarded by the scheduler's mu_
  };

  // The longest single sleep of the thread.
  static constexpr absl::Duration kMaxSleep = absl::Minutes(1);

  static TimeoutScheduler& Global();

  // Times are on `clock`'s Now() (monotonic): a timeout is a duration.
  explicit TimeoutScheduler(Clock& clock = Clock::Real());
  ~TimeoutScheduler() ABSL_LOCKS_EXCLUDED(mu_);

  // Schedule()
  //
  // Fires `timer` on the scheduler's thread at or soon after `when`, a time
  // on clock().Now(). The timer must not be pending already.
  void Schedule(Timer* timer, absl::Time when) ABSL_LOCKS_EXCLUDED(mu_);

  // Cancel()
  //
  // When it returns, `timer` will not fire and is not firing (unless called
  // from the timer's own Fire(), which it then does not wait for), so the
  // caller may destroy it. Returns true if the timer was still pending.
  bool Cancel(Timer* timer) ABSL_LOCKS_EXCLUDED(mu_);

  // Wake()
  //
  // Makes the thread look at the clock again now: for a simulated clock
  // that a test moved (a real clock needs no help).
  void Wake() { wake_.Signal(); }

  Clock& clock() { return clock_; }

  // Timers scheduled and not yet fired or cancelled (for metrics and tests).
  size_t pending() ABSL_LOCKS_EXCLUDED(mu_);

  // How many times the thread has woken from a wait, for whatever reason
  // (for tests: a thread that spins shows here).
  uint64_t wakeups() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // The heap: heap_[0] is the earliest; every timer's slot_ is its index.
  void Place(size_t slot, Timer* timer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SiftUp(size_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SiftDown(size_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remove(Timer* timer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  Mutex mu_;
  CondVar wake_;   // the thread: an earlier timer, or stopping
  CondVar fired_;  // Cancel(): the timer it waits for has fired
  std::vector<Timer*> heap_ ABSL_GUARDED_BY(mu_);
  Timer* firing_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_TIMEOUT_SCHEDULER_H_
