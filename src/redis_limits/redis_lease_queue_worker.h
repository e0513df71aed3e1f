// File: src/redis_limits/redis_lease_queue_worker.h
//
// The one thread and one Redis connection that serve every key of a
// throttle.perCaller.global limit (a LeaseQueue).

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_

#include <thread>

#include "absl/time/time.h"
#include "src/limits/lease_queue.h"
#include "src/redis_limits/redis_lease_client.h"

namespace resilience {

// RedisLeaseQueueWorker
//
// Its thread serves `queue` (LeaseQueue::ServeOne()) with one
// RedisLeaseClient: each key's lease is one script call on the one
// connection, whatever the number of keys (LeaseScript, the bucket at the
// key's store name). A failed round trip drops the connection; the queue
// decides when to try again (its backoff), and the next lease connects
// again. SIGPIPE is blocked on the thread.
//
// The constructor starts the thread; the destructor stops it (after
// LeaseQueue::Stop(), which ~LeaseQueue calls first), breaking off a round
// trip in progress. `queue` must outlive it (the queue owns it:
// LeaseQueue::SetWorker()).
class RedisLeaseQueueWorker final : public LeaseQueue::Worker {
 public:
  RedisLeaseQueueWorker(RedisLeaseClient::Options redis, LeaseQueue& queue);
  ~RedisLeaseQueueWorker() override;

  RedisLeaseQueueWorker(const RedisLeaseQueueWorker&) = delete;
  RedisLeaseQueueWorker& operator=(const RedisLeaseQueueWorker&) = delete;

 private:
  void Run();

  LeaseQueue& queue_;
  RedisLeaseClient client_;
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_
