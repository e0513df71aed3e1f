// File: src/limits/bulkhead.h
//
// The client's bound on its own outbound concurrency (a policy's
// `bulkhead`): a fixed number of slots and a bounded FIFO queue in which a
// call waits for one, never past its deadline.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_BULKHEAD_H_
#define GRPC_RESILIENCE_SRC_LIMITS_BULKHEAD_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/enforcement_mode.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// Bulkhead
//
// A call Enter()s once (a retried or hedged call's attempts all run inside
// its one slot) and Leave()s when it has ended. With a slot free it is
// admitted at once; otherwise it joins the FIFO queue if there is room
// (`max_queue`), for at most min(`max_wait`, the time left to its
// deadline): its wait ends at wait_until(). A full queue, or no time left to
// wait, is a rejection. Leave() hands the freed slot to the oldest waiter
// whose wait has not ended (Waiter::SlotGranted(), called by the thread that
// left, outside the lock); a waiter whose wait_until() has passed is never
// given one (it is dropped from the queue), so a queued call never outlives
// its deadline here. The waiter's owner arms a timer for wait_until() and
// then calls EndWait(): true means the wait ended without a slot (the call
// is rejected), false that a slot was granted first (the call holds it).
// EndWait() also takes a waiter out of the queue when its call is cancelled.
//
// No allocation but for shadow mode's deferred releases: the queue is
// intrusive (the waiter is its own link). Times are on `clock`'s Now()
// (monotonic): a wait is a duration. This class is thread-safe.
//
// Example:
//   Bulkhead bulkhead(options, clock);
//   switch (bulkhead.Enter(waiter, deadline - now)) {
//     case Bulkhead::Entry::kAdmitted: start(); break;     // ... Leave() at the end
//     case Bulkhead::Entry::kQueued: arm(waiter.wait_until()); break;
//     default: reject();
//   }
//
// Shadow mode (Options::enforcement kShadow, docs/shadow-mode.md): the call
// object asks EnterShadow() instead and runs the call at once whatever the
// answer; the bulkhead keeps its slots and queue as if it enforced them. A
// call that would have waited holds its place in the queue (without a timer:
// no latency is added) and takes the slot Leave() hands it as a waiter would,
// without SlotGranted(); its EndShadow() at the call's end says whether it
// got one, was still within its wait, or would have been rejected (its wait
// ended first). A slot so granted is given back as late as the enforced
// call would have ended (its real end plus the wait it would have had):
// the slots then track an enforcing bulkhead's.
class Bulkhead {
 public:
  struct Options {
    // Calls in their slot at once. >= 1.
    int max_concurrency = 1;
    // Calls waiting for a slot at once. >= 0 (0: no queue, a call that finds
    // no slot free is rejected at once).
    int max_queue = 0;
    // The longest a call waits in the queue. >= 0 (0: no wait).
    absl::Duration max_wait = absl::ZeroDuration();
    // bulkhead.enforcement: reject (enforce), only count what it would
    // reject (shadow), or nothing (off).
    EnforcementMode enforcement = EnforcementMode::kEnforce;
  };

  // Validate()
  //
  // OK when the options are usable; otherwise InvalidArgument naming the
  // field and the value, e.g. "max_concurrency: must be >= 1, got 0".
  static absl::Status Validate(const Options& options);

  // A call that may wait for a slot. Owned by the call; it must not be
  // destroyed while queued (EndWait() first).
  class Waiter {
   public:
    virtual ~Waiter() = default;

    // When the wait for a slot ends (clock's Now()), once Enter() queued it.
    absl::Time wait_until() const { return wait_until_; }

   protected:
    // The wait ended with a slot, which this call now holds: called once,
    // by the thread inside Leave() that freed it, without the bulkhead's
    // lock. Must not block.
    virtual void SlotGranted() = 0;

   private:
    friend class Bulkhead;
    enum class State { kIdle, kQueued, kGranted, kEnded };
    State state_ = State::kIdle;  // guarded by the bulkhead's mu_
    bool shadow_ = false;         // queued by EnterShadow(): no SlotGranted()
    absl::Time entered_;          // when it was queued
    absl::Time granted_at_;       // when a slot was handed to it
    absl::Time wait_until_;
    Waiter* next_ = nullptr;  // the queue's links, guarded likewise
    Waiter* prev_ = nullptr;
  };

  enum class Entry {
    kAdmitted,    // holds a slot: Leave() when the call ends
    kQueued,      // waits until wait_until() at most
    kQueueFull,   // rejected: no slot and max_queue calls waiting
    kNoTimeToWait,  // rejected: no slot, and max_wait or the deadline leaves no wait
  };

  struct Stats {
    int in_use = 0;
    int queued = 0;
    uint64_t admitted = 0;       // at once
    uint64_t granted = 0;        // after a wait
    uint64_t rejected_full = 0;  // kQueueFull and kNoTimeToWait
    uint64_t expired = 0;        // waits that ended without a slot
  };

  // `options` must pass Validate().
  Bulkhead(const Options& options, Clock& clock);
  Bulkhead(const Bulkhead&) = delete;
  Bulkhead& operator=(const Bulkhead&) = delete;

  // Enter()
  //
  // `time_left`: until the call's deadline (absl::InfiniteDuration() when it
  // has none). `waiter` must be idle (a new one per call).
  Entry Enter(Waiter& waiter, absl::Duration time_left) ABSL_LOCKS_EXCLUDED(mu_);

  // EndWait()
  //
  // The queued `waiter`'s wait is over (its timer fired, or its call was
  // cancelled): true when it has no slot (taken out of the queue if still
  // there; its call must not Leave()), false when a slot was granted before
  // (SlotGranted() has been or is being called; the call must Leave()).
  bool EndWait(Waiter& waiter) ABSL_LOCKS_EXCLUDED(mu_);

  // Leave()
  //
  // A call that held a slot (admitted, or granted after a wait) ended.
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  // EnterShadow()
  //
  // Enter()'s decision, slots and queue, for a call that runs now whatever
  // it says (shadow mode): kAdmitted: it holds a slot (Leave() at its end);
  // kQueued: it holds a place in the queue until EndShadow(); kQueueFull,
  // kNoTimeToWait: the bulkhead would have rejected it, it holds nothing.
  Entry EnterShadow(Waiter& waiter, absl::Duration time_left) ABSL_LOCKS_EXCLUDED(mu_);

  // EndShadow()
  //
  // The call EnterShadow() queued ended: kGranted: Leave() had handed it a
  // slot, given back once the wait it would have had is over again (a
  // deferred release; the only case that may allocate); kWaiting: it was still waiting within its wait
  // (taken out of the queue); kExpired: its wait ended without a slot, it
  // would have been rejected.
  enum class ShadowEnd { kGranted, kWaiting, kExpired };
  ShadowEnd EndShadow(Waiter& waiter) ABSL_LOCKS_EXCLUDED(mu_);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  const Options& options() const { return options_; }
  Clock& clock() const { return clock_; }

 private:
  Entry EnterLocked(Waiter& waiter, absl::Duration time_left) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unlink(Waiter& waiter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A slot freed at `at`: handed to the queue's head whose wait has not
  // ended by then (a waiter that is not a shadow one is put on `notify`),
  // else back to the pool.
  void Release(absl::Time at, Waiter*& notify) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shadow slots whose deferred release is due by `now`, in time order.
  void ReleaseDue(absl::Time now, Waiter*& notify) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SlotGranted() of each waiter on the list, outside the lock.
  static void Notify(Waiter* granted);

  const Options options_;
  Clock& clock_;
  mutable Mutex mu_;
  int in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int queued_ ABSL_GUARDED_BY(mu_) = 0;
  Waiter* head_ ABSL_GUARDED_BY(mu_) = nullptr;  // oldest
  Waiter* tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  Stats counts_ ABSL_GUARDED_BY(mu_);
  // Shadow: slots of calls granted after a would-be wait, given back when
  // the call would have ended had it started at its grant (a min-heap of
  // those times; each holds a slot, so at most max_concurrency of them).
  // Applied by the next Enter(), Leave(), EndWait() or EndShadow().
  std::vector<absl::Time> deferred_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_BULKHEAD_H_
