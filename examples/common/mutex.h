// File: examples/common/mutex.h
//
// The examples' lock: std::mutex carrying Abseil's thread-safety
// annotations, so that ABSL_GUARDED_BY in the examples is checked by clang's
// -Wthread-safety (scripts/check_thread_safety.sh) as in the library. Not
// absl::Mutex: Debian's Abseil is not built for ThreadSanitizer, which then
// misses its synchronization; std::mutex is a pthread mutex, which it sees.
// To wait on one, use std::condition_variable_any (it takes any lockable):
//
//   example_sync::MutexLock lock(&mu_);
//   while (queue_.empty()) cv_.wait(mu_);   // std::condition_variable_any cv_;

#ifndef GRPC_RESILIENCE_EXAMPLES_COMMON_MUTEX_H_
#define GRPC_RESILIENCE_EXAMPLES_COMMON_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace example_sync {

// Mutex
//
// An exclusive, non-recursive lock; lock() and unlock() as std::mutex's.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// MutexLock
//
// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(*mu) { mu_.lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace example_sync

#endif  // GRPC_RESILIENCE_EXAMPLES_COMMON_MUTEX_H_
