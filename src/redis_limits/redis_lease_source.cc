#include "src/redis_limits/redis_lease_source.h"

#include <algorithm>
#include <utility>

#include "src/core/clock.h"

namespace resilience {

RedisLeaseSource::RedisLeaseSource(Options options, GlobalRateLimiter& limiter)
    : options_(std::move(options)), limiter_(limiter), client_(options_.redis) {
  thread_ = std::thread([this] { Run(); });
}

RedisLeaseSource::~RedisLeaseSource() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  client_.Shutdown();
  thread_.join();
}

void RedisLeaseSource::Wake() {
  if (woken_.load(std::memory_order_relaxed)) return;
  if (woken_.exchange(true, std::memory_order_acq_rel)) return;
  MutexLock lock(&mu_);
  cv_.Signal();
}

bool RedisLeaseSource::Pause(absl::Duration d, bool wakeable) {
  // A real wait on a condition variable: real monotonic time.
  const absl::Time until = Clock::Real().Now() + d;
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (wakeable && woken_.exchange(false, std::memory_order_acq_rel)) return true;
    const absl::Duration left = until - Clock::Real().Now();
    if (left <= absl::ZeroDuration()) return true;
    cv_.WaitWithTimeout(&mu_, left);
  }
  return false;
}

bool RedisLeaseSource::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

void RedisLeaseSource::Run() {
  // A write to a socket Redis closed raises SIGPIPE on this thread: blocked
  // here, it stays pending (and is cleared) instead of ending the process.
  RedisLeaseClient::BlockSigpipe();

  absl::Duration backoff = options_.min_backoff;
  // A failed connect or round trip: the connection goes, the limiter hears
  // why (unless the destructor broke it off), and the thread backs off.
  // False once stopping.
  auto fail = [&](const absl::Status& s) {
    RedisLeaseClient::DropPendingSigpipe();
    client_.Disconnect();
    if (Stopping()) return false;
    limiter_.OnFailure(s.message());
    if (!Pause(backoff, /*wakeable=*/false)) return false;
    backoff = std::min(backoff * 2, options_.max_backoff);
    return true;
  };
  while (true) {
    if (!client_.connected()) {
      if (absl::Status s = client_.Connect(); !s.ok()) {
        if (!fail(s)) return;
        continue;
      }
    }
    const int64_t want = limiter_.LeaseWanted();
    if (want == 0) {
      if (!Pause(limiter_.options().lease_interval, /*wakeable=*/true)) return;
      continue;
    }
    absl::StatusOr<LeaseScript::Reply> lease =
        client_.Lease(options_.key, limiter_.options().rate_per_second, limiter_.options().burst,
                      want, leased_before_);
    if (!lease.ok()) {
      if (!fail(lease.status())) return;
      continue;
    }
    backoff = options_.min_backoff;
    leased_before_ = true;
    if (lease->repairs & LeaseScript::kKeyLost) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kKeyLost);
    }
    if (lease->repairs & LeaseScript::kBadValue) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kBadValue);
    }
    if (lease->repairs & LeaseScript::kClockBack) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kClockBack);
    }
    limiter_.OnLease(want, lease->granted, lease->remaining);
    // The fleet's bucket is dry: wait for it rather than ask again at once.
    if (lease->granted < want && !Pause(limiter_.DryWait(), /*wakeable=*/false)) return;
  }
}

}  // namespace resilience
