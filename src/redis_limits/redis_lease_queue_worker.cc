#include "src/redis_limits/redis_lease_queue_worker.h"

#include <algorithm>
#include <utility>

#include "src/limits/keyed_lease.h"

namespace resilience {
namespace {

// How long the thread sleeps with nothing queued: it wakes earlier for a
// key queued or due, and at once when stopped.
constexpr absl::Duration kIdleWait = absl::Seconds(1);

}  // namespace

// What a queue holds: its place in the worker's turn, and the worker alive.
class RedisLeaseQueueWorker::Handle final : public LeaseQueue::Worker {
 public:
  Handle(std::shared_ptr<RedisLeaseQueueWorker> worker, LeaseQueue& queue)
      : worker_(std::move(worker)), queue_(queue) {
    queue_.SetNotify([w = worker_.get()] { w->Notify(); });
    worker_->Add(&queue_);
  }
  ~Handle() override { worker_->Remove(&queue_); }

 private:
  const std::shared_ptr<RedisLeaseQueueWorker> worker_;
  LeaseQueue& queue_;
};

std::unique_ptr<LeaseQueue::Worker> RedisLeaseQueueWorker::Serve(
    std::shared_ptr<RedisLeaseQueueWorker> worker, LeaseQueue& queue) {
  return std::make_unique<Handle>(std::move(worker), queue);
}

RedisLeaseQueueWorker::RedisLeaseQueueWorker(RedisLeaseClient::Options redis)
    : client_(std::move(redis)) {
  thread_ = std::thread([this] { Run(); });
}

RedisLeaseQueueWorker::~RedisLeaseQueueWorker() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  client_.Shutdown();
  thread_.join();
}

size_t RedisLeaseQueueWorker::queues() const {
  MutexLock lock(&mu_);
  return queues_.size();
}

void RedisLeaseQueueWorker::Add(LeaseQueue* queue) {
  MutexLock lock(&mu_);
  queues_.push_back(queue);
  notified_ = true;
  cv_.SignalAll();
}

void RedisLeaseQueueWorker::Remove(LeaseQueue* queue) {
  MutexLock lock(&mu_);
  queues_.erase(std::remove(queues_.begin(), queues_.end(), queue), queues_.end());
  while (serving_ == queue) cv_.Wait(&mu_);
}

void RedisLeaseQueueWorker::Notify() {
  MutexLock lock(&mu_);
  notified_ = true;
  cv_.SignalAll();
}

void RedisLeaseQueueWorker::Run() {
  RedisLeaseClient::BlockSigpipe();
  const LeaseQueue::Store store = [this](const KeyedLease& key,
                                         int64_t want) -> absl::StatusOr<LeaseGrant> {
    const GlobalRateLimiter::Options& o = key.limiter().options();
    absl::StatusOr<LeaseScript::Reply> reply =
        client_.Lease(key.store_key(), o.rate_per_second, o.burst, want, key.leased_before(),
                      /*expire_when_full=*/true);
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
  std::vector<LeaseQueue*> turn;
  while (true) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      turn = queues_;
      notified_ = false;
    }
    for (LeaseQueue* queue : turn) {
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
        // Removed since the turn began: its queue may be gone.
        if (std::find(queues_.begin(), queues_.end(), queue) == queues_.end()) continue;
        serving_ = queue;
      }
      for (int served = 0; served < kTurn && queue->ServeOne(store); ++served) {
      }
      MutexLock lock(&mu_);
      serving_ = nullptr;
      cv_.SignalAll();
    }
    MutexLock lock(&mu_);
    if (stopping_) return;
    if (notified_) continue;  // keys queued during the turn
    absl::Duration wait = kIdleWait;
    for (const LeaseQueue* queue : queues_) wait = std::min(wait, queue->TimeToNext());
    if (wait > absl::ZeroDuration()) cv_.WaitWithTimeout(&mu_, wait);
  }
}

}  // namespace resilience
