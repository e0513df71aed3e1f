// File: src/limits/lease_queue.h
//
// The keys of a scope's fleet-wide per-caller limit that want a lease, and
// the logic of the one worker that serves them all on one connection to the
// store (docs/per-caller-limits.md, "Fleet-wide per key").

#ifndef GRPC_RESILIENCE_SRC_LIMITS_LEASE_QUEUE_H_
#define GRPC_RESILIENCE_SRC_LIMITS_LEASE_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

class KeyedLease;

// What the store answered to one key's lease request.
struct LeaseGrant {
  int64_t granted = 0;
  double remaining = 0;  // tokens left in the key's bucket
  // Repairs the store made to the key's bucket (GlobalRateLimiter::Anomaly).
  bool key_lost = false;
  bool bad_value = false;
  bool clock_back = false;
};

// LeaseQueue
//
// Many keys, one worker: KeyedLease::Wake() queues a key (once: a queued key
// is not queued again), and the worker's thread takes the keys in turn
// (ServeOne()), asks each one's GlobalRateLimiter how much it wants and
// leases that from the store with one round trip (`Store`, Redis's in
// src/redis_limits, whose one worker serves every queue on one Redis). So
// the threads and connections do not grow with the keys, and no call ever
// waits on the store: calls are admitted from the tokens each key leased,
// or its local share.
//
// A key the store answered short (its fleet bucket is dry) waits
// GlobalRateLimiter::DryWait() before its next lease, without holding up the
// others.
//
// The store down: the first failed round trip marks the queue down (logged
// once, counted: outages()), and each key served while down goes to its
// local share (GlobalRateLimiter::OnFailure(), not logged per key) and then
// waits, without round trips, for the next attempt (`min_backoff` doubling
// to `max_backoff`). The first key served at that time tries the store
// again; its success ends the outage (logged once, counted: recoveries()),
// and every key that asked meanwhile leases again, back to the fleet's
// limit.
//
// This class is thread-safe: Push() from the call path, the rest from the
// one worker (a test's thread, or the store client's).
class LeaseQueue {
 public:
  // One round trip to the store for `want` tokens of `key`; an error when the
  // store could not be reached or answered with one.
  using Store = std::function<absl::StatusOr<LeaseGrant>(const KeyedLease& key, int64_t want)>;

  // What serves the queue (the store client's thread, or its place in a
  // thread shared by several queues), owned by the queue so that it stops
  // serving it before the queue goes.
  class Worker {
   public:
    virtual ~Worker() = default;
  };

  struct Options {
    // Names the keys in log lines ("'grpc_resilience:Get:caller:*' at
    // 127.0.0.1:6379 (methodConfig[0].throttle.perCaller.global)").
    std::string name;
    // Where the one line per outage and recovery goes; null: nowhere.
    std::function<void(const std::string&)> log;
    absl::Duration min_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(1);
  };

  LeaseQueue(Options options, Clock& clock);
  // Stops the worker (Stop(), then the worker's destructor).
  ~LeaseQueue();

  LeaseQueue(const LeaseQueue&) = delete;
  LeaseQueue& operator=(const LeaseQueue&) = delete;

  void SetWorker(std::unique_ptr<Worker> worker);

  // SetNotify()
  //
  // Also called after each Push() (outside the queue's mutex): for a worker
  // that serves several queues and waits on its own condition variable. Set
  // before the first Push() (by the worker, when it takes the queue).
  void SetNotify(std::function<void()> notify) { notify_ = std::move(notify); }

  // Push()
  //
  // `key` wants a lease (KeyedLease::Wake()). Never blocks beyond the
  // queue's mutex.
  void Push(std::weak_ptr<KeyedLease> key) ABSL_LOCKS_EXCLUDED(mu_);

  // For the worker.

  // ServeOne()
  //
  // Serves the next key due, with `store`; false when none is due (or all
  // queued keys were dropped), and once stopped.
  bool ServeOne(const Store& store) ABSL_LOCKS_EXCLUDED(mu_);

  // TimeToNext()
  //
  // Zero when a key is due now, else how long until the first deferred key
  // is due; InfiniteDuration() when none is queued.
  absl::Duration TimeToNext() const ABSL_LOCKS_EXCLUDED(mu_);

  // Wait()
  //
  // For a worker serving this queue alone: waits (real time) until a key is
  // queued, the first deferred key is due, at most `at_most`, or Stop(),
  // possibly less (the worker calls it in a loop); false once stopped.
  bool Wait(absl::Duration at_most) ABSL_LOCKS_EXCLUDED(mu_);

  // Stop()
  //
  // Wait() returns false, and ServeOne() serves nothing, from now on.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the store answered the last round trip (true before the first).
  bool store_up() const { return !down_.load(std::memory_order_acquire); }
  // Keys queued now, due or waiting.
  size_t pending() const ABSL_LOCKS_EXCLUDED(mu_);
  // Counters since creation: round trips answered and failed, outages and
  // recoveries (each logged with one line).
  int64_t leases() const { return leases_.load(std::memory_order_relaxed); }
  int64_t lease_failures() const { return lease_failures_.load(std::memory_order_relaxed); }
  int64_t outages() const { return outages_.load(std::memory_order_relaxed); }
  int64_t recoveries() const { return recoveries_.load(std::memory_order_relaxed); }

 private:
  // The next due key that is still alive; null when none.
  std::shared_ptr<KeyedLease> Next() ABSL_LOCKS_EXCLUDED(mu_);
  // `key` waits until `due_ns` (queued all the while: Wake() adds nothing).
  void Defer(std::shared_ptr<KeyedLease> key, int64_t due_ns) ABSL_LOCKS_EXCLUDED(mu_);
  void Log(const std::string& line) const;

  const Options options_;
  Clock& clock_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::weak_ptr<KeyedLease>> ready_ ABSL_GUARDED_BY(mu_);
  std::multimap<int64_t, std::weak_ptr<KeyedLease>> deferred_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // The worker's state.
  std::atomic<bool> down_{false};
  std::string down_why_;
  int64_t retry_at_ns_ = 0;
  absl::Duration backoff_;

  std::atomic<int64_t> leases_{0};
  std::atomic<int64_t> lease_failures_{0};
  std::atomic<int64_t> outages_{0};
  std::atomic<int64_t> recoveries_{0};
  std::function<void()> notify_;
  std::unique_ptr<Worker> worker_;  // destroyed first (by ~LeaseQueue)
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_LEASE_QUEUE_H_
