// File: src/core/mutex.h
//
// The mutex of grpc-resilience: std::mutex with Abseil's thread-safety
// annotations, so that ABSL_GUARDED_BY and friends are checked by clang's
// -Wthread-safety exactly as with absl::Mutex.
//
// Why not absl::Mutex: Debian 12's libabsl is not built with ThreadSanitizer,
// so TSan cannot see absl::Mutex's synchronization (its fast path is atomics
// inside the uninstrumented library) and reports every guarded access as a
// race. std::mutex is pthread_mutex underneath, which TSan intercepts, so the
// TSan build checks our locking for real.

#ifndef GRPC_RESILIENCE_SRC_CORE_MUTEX_H_
#define GRPC_RESILIENCE_SRC_CORE_MUTEX_H_

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace resilience {

// Mutex
//
// A non-recursive exclusive lock. This class is thread-safe.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// CondVar
//
// A condition variable for Mutex. Example:
//   MutexLock lock(&mu_);
//   while (queue_.empty()) cv_.Wait(&mu_);
class CondVar {
 public:
  // Wait()
  //
  // Atomically releases `mu` (which must be held) and waits for a Signal()
  // or SignalAll(), or a spurious wakeup; holds `mu` again on return.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held, by the caller's MutexLock
  }
  // WaitWithTimeout()
  //
  // Wait() for at most `timeout`; returns true if it timed out. Any
  // duration is safe: waits longer than a day (absl::InfiniteDuration()
  // included) wake after a day, which callers treat like a spurious wake-up;
  // the steady clock would overflow on the raw value.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    timeout = std::clamp(timeout, absl::ZeroDuration(), absl::Hours(24));
    const bool timed_out =
        cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// MutexLock
//
// Holds `mu` for the scope. Example:
//   { MutexLock lock(&mu_); ++guarded_; }
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_MUTEX_H_
