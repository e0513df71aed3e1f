// File: src/client_interceptors/timeout_scheduler.h
//
// One thread that fires call timeouts, instead of a grpc::Alarm per call.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_SCHEDULER_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_SCHEDULER_H_

#include <functional>
#include <memory>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "src/breaker/mutex.h"

namespace resilience {

// TimeoutScheduler
//
// Why: a grpc::Alarm per call cost about 7% of a loopback unary call's
// throughput on the 2-core test machine (client_chain_bench), mostly because
// cancelling it, which every call that finishes in time does, runs its
// callback on another thread. Here arming is a push onto a heap under a
// mutex, and a call that finishes in time does nothing at all: its entry is
// dropped when its time comes (the callback sees that the call is done).
//
// The algorithm: a min-heap of (when, callback); one thread sleeps until the
// earliest `when` (or a new, earlier entry arrives), then runs what is due,
// outside the lock. Callbacks must be short and must not block. This class
// is thread-safe; Global() is never destroyed.
class TimeoutScheduler {
 public:
  static TimeoutScheduler& Global();

  TimeoutScheduler();
  ~TimeoutScheduler() ABSL_LOCKS_EXCLUDED(mu_);

  // Schedule()
  //
  // Runs `callback` on the scheduler's thread at or soon after `when`.
  void Schedule(absl::Time when, std::function<void()> callback) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    absl::Time when;
    std::function<void()> callback;
    bool operator>(const Entry& other) const { return when > other.when; }
  };
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  Mutex mu_;
  CondVar cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_SCHEDULER_H_
