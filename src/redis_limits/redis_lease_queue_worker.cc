#include "src/redis_limits/redis_lease_queue_worker.h"

#include <utility>

#include "src/limits/keyed_lease.h"

namespace resilience {
namespace {

// How long the thread sleeps with nothing queued: Wait() returns earlier
// for a key queued or due, and at once on Stop().
constexpr absl::Duration kIdleWait = absl::Seconds(1);

}  // namespace

RedisLeaseQueueWorker::RedisLeaseQueueWorker(RedisLeaseClient::Options redis, LeaseQueue& queue)
    : queue_(queue), client_(std::move(redis)) {
  thread_ = std::thread([this] { Run(); });
}

RedisLeaseQueueWorker::~RedisLeaseQueueWorker() {
  queue_.Stop();
  client_.Shutdown();
  thread_.join();
}

void RedisLeaseQueueWorker::Run() {
  RedisLeaseClient::BlockSigpipe();
  const LeaseQueue::Store store = [this](const KeyedLease& key,
                                         int64_t want) -> absl::StatusOr<LeaseGrant> {
    const GlobalRateLimiter::Options& o = key.limiter().options();
    absl::StatusOr<LeaseScript::Reply> reply =
        client_.Lease(key.store_key(), o.rate_per_second, o.burst, want, key.leased_before());
    if (!reply.ok()) {
      RedisLeaseClient::DropPendingSigpipe();
      return reply.status();
    }
    LeaseGrant grant;
    grant.granted = reply->granted;
    grant.remaining = reply->remaining;
    grant.key_lost = (reply->repairs & LeaseScript::kKeyLost) != 0;
    grant.bad_value = (reply->repairs & LeaseScript::kBadValue) != 0;
    grant.clock_back = (reply->repairs & LeaseScript::kClockBack) != 0;
    return grant;
  };
  while (queue_.Wait(kIdleWait)) {
    // A round trip the destructor broke off is not the store's failure.
    while (!client_.shut_down() && queue_.ServeOne(store)) {
    }
  }
}

}  // namespace resilience
