// File: src/redis_limits/redis_lease_source.h
//
// Leases a GlobalRateLimiter's tokens from a token bucket kept in Redis, on
// a thread of its own (hiredis, Debian's libhiredis-dev).

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_SOURCE_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"
#include "src/redis_limits/lease_script.h"
#include "src/redis_limits/redis_lease_client.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/lease_source.h"

namespace resilience {

// RedisLeaseSource
//
// Its thread connects to Redis (RedisLeaseClient: connect `timeout`; AUTH
// when there is a password), and whenever the limiter is low (Wake(), or every lease
// interval) takes the lease GlobalRateLimiter::LeaseWanted() asks for with
// one script call (LeaseScript; EVALSHA, EVAL when Redis no longer has the
// script): the bucket's state is a hash at `key` refilled by Redis's own
// TIME, so the servers' clocks need not agree. Every round trip must finish
// within `timeout` (a deadline, not a limit per read). Failures (refused,
// timed out, refused credentials, error replies) go to
// GlobalRateLimiter::OnFailure(), repairs the script made to the bucket to
// OnAnomaly(); the thread then reconnects with backoff (min_backoff
// doubling to max_backoff). SIGPIPE is blocked on the thread, so a Redis
// that goes away cannot kill the process.
//
// The constructor starts the thread and returns at once; the destructor
// stops it, breaking off a round trip in progress (shutdown of the socket),
// so it returns within about one connect attempt at most. This class is
// thread-safe.
class RedisLeaseSource final : public LeaseSource {
 public:
  struct Options {
    // Where the store is, and how to log in (RedisLeaseClient).
    RedisLeaseClient::Options redis;
    std::string key;
    absl::Duration min_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(1);
  };

  // `limiter` must outlive this object; its rate and burst are the bucket's.
  RedisLeaseSource(Options options, GlobalRateLimiter& limiter);
  ~RedisLeaseSource() override;

  RedisLeaseSource(const RedisLeaseSource&) = delete;
  RedisLeaseSource& operator=(const RedisLeaseSource&) = delete;

  void Wake() override;

 private:
  void Run();
  // Waits `d`, or until stopped, or (when `wakeable`) woken. False once
  // stopping.
  bool Pause(absl::Duration d, bool wakeable) ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  GlobalRateLimiter& limiter_;
  // The thread's connection; whether a lease from the key ever succeeded
  // (a missing key is then a lost one).
  RedisLeaseClient client_;
  bool leased_before_ = false;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> woken_{false};
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_SOURCE_H_
