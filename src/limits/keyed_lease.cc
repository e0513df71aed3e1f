#include "src/limits/keyed_lease.h"

#include <utility>

#include "src/limits/lease_queue.h"

namespace resilience {

absl::StatusOr<std::shared_ptr<KeyedLease>> KeyedLease::Create(std::string store_key,
                                                               GlobalRateLimiter::Options options,
                                                               Clock& clock, LeaseQueue& queue) {
  absl::StatusOr<std::unique_ptr<GlobalRateLimiter>> limiter =
      GlobalRateLimiter::Create(std::move(options), clock);
  if (!limiter.ok()) return limiter.status();
  std::shared_ptr<KeyedLease> lease(
      new KeyedLease(std::move(store_key), *std::move(limiter), queue));
  lease->limiter_->Attach(lease.get());
  return lease;
}

KeyedLease::KeyedLease(std::string store_key, std::unique_ptr<GlobalRateLimiter> limiter,
                       LeaseQueue& queue)
    : store_key_(std::move(store_key)), limiter_(std::move(limiter)), queue_(queue) {}

KeyedLease::~KeyedLease() { limiter_->Attach(nullptr); }

void KeyedLease::Wake() {
  // Called on every call that finds the key low: one queue entry at a time.
  if (queued_.load(std::memory_order_relaxed)) return;
  if (queued_.exchange(true, std::memory_order_acq_rel)) return;
  queue_.Push(weak_from_this());
}

}  // namespace resilience
