#include "src/limits/lease_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/keyed_lease.h"

namespace resilience {

LeaseQueue::LeaseQueue(Options options, Clock& clock)
    : options_(std::move(options)), clock_(clock), backoff_(options_.min_backoff) {}

LeaseQueue::~LeaseQueue() {
  Stop();
  worker_.reset();
}

void LeaseQueue::SetWorker(std::unique_ptr<Worker> worker) { worker_ = std::move(worker); }

void LeaseQueue::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void LeaseQueue::Push(std::weak_ptr<KeyedLease> key) {
  {
    MutexLock lock(&mu_);
    ready_.push_back(std::move(key));
    cv_.Signal();
  }
  if (notify_) notify_();
}

absl::Duration LeaseQueue::TimeToNext() const {
  MutexLock lock(&mu_);
  if (!ready_.empty()) return absl::ZeroDuration();
  if (deferred_.empty()) return absl::InfiniteDuration();
  return std::max(absl::ZeroDuration(),
                  absl::FromUnixNanos(deferred_.begin()->first) - clock_.Now());
}

void LeaseQueue::Defer(std::shared_ptr<KeyedLease> key, int64_t due_ns) {
  MutexLock lock(&mu_);
  deferred_.emplace(due_ns, std::move(key));
  // The worker may be waiting past `due_ns`.
  cv_.Signal();
}

std::shared_ptr<KeyedLease> LeaseQueue::Next() {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  MutexLock lock(&mu_);
  // Stopped: the table is going, its keys' leases would be lost.
  if (stopping_) return nullptr;
  while (!deferred_.empty() && deferred_.begin()->first <= now_ns) {
    ready_.push_back(std::move(deferred_.begin()->second));
    deferred_.erase(deferred_.begin());
  }
  while (!ready_.empty()) {
    std::shared_ptr<KeyedLease> key = ready_.front().lock();
    ready_.pop_front();
    if (key != nullptr) return key;  // else evicted since it asked: skipped
  }
  return nullptr;
}

bool LeaseQueue::ServeOne(const Store& store) {
  std::shared_ptr<KeyedLease> key = Next();
  if (key == nullptr) return false;
  GlobalRateLimiter& limiter = key->limiter();
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  if (down_.load(std::memory_order_relaxed) && now_ns < retry_at_ns_) {
    // No round trip before the next attempt: the key admits its local share
    // and asks again then (or at once if it was evicted meanwhile: skipped).
    if (limiter.mode() != GlobalRateLimiter::Mode::kLocal) limiter.OnFailure(down_why_);
    Defer(std::move(key), retry_at_ns_);
    return true;
  }
  const int64_t want = limiter.LeaseWanted();
  if (want == 0) {
    key->Dequeued();
    return true;
  }
  absl::StatusOr<LeaseGrant> grant = store(*key, want);
  if (!grant.ok() && stopping()) {
    // Broken off by the worker's destructor: not the store's failure.
    Defer(std::move(key), now_ns);
    return true;
  }
  if (!grant.ok()) {
    lease_failures_.fetch_add(1, std::memory_order_relaxed);
    const std::string why(grant.status().message());
    if (!down_.load(std::memory_order_relaxed)) {
      backoff_ = options_.min_backoff;
      down_.store(true, std::memory_order_release);
      outages_.fetch_add(1, std::memory_order_relaxed);
      Log(absl::StrCat("per-caller fleet limit ", options_.name, ": store unreachable (", why,
                       "): each caller key admits its local share until it is back"));
    } else {
      backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    }
    down_why_ = why;
    retry_at_ns_ = now_ns + absl::ToInt64Nanoseconds(backoff_);
    limiter.OnFailure(why);
    Defer(std::move(key), retry_at_ns_);
    return true;
  }
  leases_.fetch_add(1, std::memory_order_relaxed);
  if (down_.exchange(false, std::memory_order_acq_rel)) {
    recoveries_.fetch_add(1, std::memory_order_relaxed);
    Log(absl::StrCat("per-caller fleet limit ", options_.name,
                     ": store reachable again, each caller key back to the fleet's limit"));
  }
  key->set_leased_before();
  if (grant->key_lost) limiter.OnAnomaly(GlobalRateLimiter::Anomaly::kKeyLost);
  if (grant->bad_value) limiter.OnAnomaly(GlobalRateLimiter::Anomaly::kBadValue);
  if (grant->clock_back) limiter.OnAnomaly(GlobalRateLimiter::Anomaly::kClockBack);
  limiter.OnLease(want, grant->granted, grant->remaining);
  if (grant->granted < want) {
    // The key's fleet bucket is dry: asking again before it refills would
    // only cost round trips the other keys wait behind.
    Defer(std::move(key), absl::ToUnixNanos(clock_.Now()) +
                              absl::ToInt64Nanoseconds(limiter.DryWait()));
  } else {
    key->Dequeued();
  }
  return true;
}

bool LeaseQueue::Wait(absl::Duration at_most) {
  MutexLock lock(&mu_);
  if (!stopping_ && ready_.empty()) {
    // One wait: the worker loops. A deadline on the queue's clock would
    // never come on a clock that stands still (a test's).
    absl::Duration wait = at_most;
    if (!deferred_.empty()) {
      wait = std::min(wait, absl::FromUnixNanos(deferred_.begin()->first) - clock_.Now());
    }
    if (wait > absl::ZeroDuration()) cv_.WaitWithTimeout(&mu_, wait);
  }
  return !stopping_;
}

void LeaseQueue::Stop() {
  MutexLock lock(&mu_);
  stopping_ = true;
  cv_.SignalAll();
}

bool LeaseQueue::stopping() const {
  MutexLock lock(&mu_);
  return stopping_;
}

size_t LeaseQueue::pending() const {
  MutexLock lock(&mu_);
  return ready_.size() + deferred_.size();
}

}  // namespace resilience
