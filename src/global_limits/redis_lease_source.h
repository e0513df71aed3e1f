// File: src/global_limits/redis_lease_source.h
//
// Leases a GlobalRateLimiter's tokens from a token bucket kept in Redis, on
// a thread of its own (hiredis, Debian's libhiredis-dev).

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_REDIS_LEASE_SOURCE_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_REDIS_LEASE_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/internal/core/mutex.h"
#include "grpc_resilience/internal/limits/global_rate_limiter.h"
#include "grpc_resilience/internal/limits/lease_source.h"

struct redisContext;

namespace resilience {

// RedisLeaseSource
//
// Its thread connects to Redis (connect and command `timeout`), and
// whenever the limiter is low (Wake(), or every lease interval) takes the
// lease GlobalRateLimiter::LeaseWanted() asks for with one script call
// (EVALSHA, EVAL when Redis no longer has the script): the bucket's state
// is a hash at `key` refilled by Redis's own TIME, so the servers' clocks
// need not agree. Failures (refused, timed out, error replies) go to
// GlobalRateLimiter::OnFailure(); the thread then reconnects with backoff
// (min_backoff doubling to max_backoff). SIGPIPE is blocked on the thread,
// so a Redis that goes away cannot kill the process.
//
// The constructor starts the thread and returns at once; the destructor
// stops it, breaking off a round trip in progress (shutdown of the socket),
// so it returns within about one connect attempt at most. This class is
// thread-safe.
class RedisLeaseSource final : public LeaseSource {
 public:
  struct Options {
    std::string host;
    int port = 6379;
    std::string key;
    absl::Duration timeout = absl::Milliseconds(200);
    absl::Duration min_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(1);
  };

  // The Lua script of one lease (KEYS[1] the bucket; ARGV rate per second,
  // burst, tokens wanted, key lifetime in ms). Returns {granted, remaining}.
  static const char kLeaseScript[];

  // `limiter` must outlive this object; its rate and burst are the bucket's.
  RedisLeaseSource(Options options, GlobalRateLimiter& limiter);
  ~RedisLeaseSource() override;

  RedisLeaseSource(const RedisLeaseSource&) = delete;
  RedisLeaseSource& operator=(const RedisLeaseSource&) = delete;

  void Wake() override;

 private:
  void Run();
  // Connects and loads the script; the error otherwise.
  absl::Status Connect();
  void Disconnect() ABSL_LOCKS_EXCLUDED(mu_);
  // One round trip for `want` tokens.
  absl::Status Lease(int64_t want, int64_t* granted, double* remaining);
  // Waits `d`, or until stopped, or (when `wakeable`) woken. False once
  // stopping.
  bool Pause(absl::Duration d, bool wakeable) ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  GlobalRateLimiter& limiter_;
  // The thread's connection and the script's SHA1.
  redisContext* context_ = nullptr;
  std::string sha_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The connection's socket, for the destructor to break a round trip off;
  // -1 without one.
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  std::atomic<bool> woken_{false};
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_REDIS_LEASE_SOURCE_H_
