// File: src/redis_limits/redis_lease_queue_worker.h
//
// The one thread and one Redis connection that serve every key of every
// throttle.perCaller.global of a server on one Redis (LeaseQueues).

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_

#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"
#include "src/limits/lease_queue.h"
#include "src/redis_limits/redis_lease_client.h"

namespace resilience {

// RedisLeaseQueueWorker
//
// Its thread serves the LeaseQueues given to it (Serve()) in turn, with one
// RedisLeaseClient: each key's lease is one script call on the one
// connection (LeaseScript, the bucket at the key's store name), whatever
// the number of keys and queues; at most kTurn keys of a queue before the
// next queue's. A failed round trip drops the connection; each queue
// decides when to try again (its backoff), and the next lease connects
// again. SIGPIPE is blocked on the thread. RedisFleetLimitBackend keeps one
// per Redis address and login while a queue uses it.
//
// The constructor starts the thread; the destructor stops it, breaking off
// a round trip in progress. This class is thread-safe.
class RedisLeaseQueueWorker {
 public:
  static constexpr int kTurn = 64;

  explicit RedisLeaseQueueWorker(RedisLeaseClient::Options redis);
  ~RedisLeaseQueueWorker();

  RedisLeaseQueueWorker(const RedisLeaseQueueWorker&) = delete;
  RedisLeaseQueueWorker& operator=(const RedisLeaseQueueWorker&) = delete;

  // Serve()
  //
  // `worker` serves `queue` until the returned handle is destroyed (which
  // waits for a lease of the queue in progress, at most the round trip's
  // timeout); the handle keeps `worker` alive. The queue owns the handle
  // (LeaseQueue::SetWorker()).
  static std::unique_ptr<LeaseQueue::Worker> Serve(std::shared_ptr<RedisLeaseQueueWorker> worker,
                                                   LeaseQueue& queue);

  // Queues served now.
  size_t queues() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Handle;
  void Add(LeaseQueue* queue) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(LeaseQueue* queue) ABSL_LOCKS_EXCLUDED(mu_);
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  void Run();

  RedisLeaseClient client_;
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<LeaseQueue*> queues_ ABSL_GUARDED_BY(mu_);
  // The queue whose keys the thread is serving; Remove() waits for it.
  LeaseQueue* serving_ ABSL_GUARDED_BY(mu_) = nullptr;
  // A key was queued since the thread last looked.
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_QUEUE_WORKER_H_
