// File: examples/cache_service/bounded_capacity_service.h
//
// A cache service whose Get is served by a bounded pool of workers, each
// call taking a service time: a backend of capacity workers / service time,
// the rest waiting in a FIFO queue. The number of workers can change while it
// serves (a noisy neighbour, a deploy). The overload experiment and
// cache_demo's adaptive-limit section run against it.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_BOUNDED_CAPACITY_SERVICE_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_BOUNDED_CAPACITY_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/common/mutex.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server.h"
#include "grpcpp/server.h"

namespace cache_service {

// BoundedCapacityService
//
// Get waits for one of the active workers, which "works" (sleeps) a service
// time uniform in [0.5, 1.5] x `service_time`, then answers OK. Like a
// handler that never checks its deadline, a worker finishes every call it
// takes, expired or not. Store and Dump are not implemented. Stop() before
// the server shuts down: it answers the queued calls UNAVAILABLE, and every
// later one. This class is thread-safe.
class BoundedCapacityService final : public cache::v1::CacheService::CallbackService {
 public:
  // `max_workers` threads, `workers` of them active at first (clamped to
  // [1, max_workers]).
  BoundedCapacityService(int max_workers, int workers, absl::Duration service_time,
                         uint64_t seed = 1);
  ~BoundedCapacityService() override;

  // SetWorkers()
  //
  // From now on, at most `workers` calls are worked on at once (clamped to
  // [1, max_workers]); calls already running finish.
  void SetWorkers(int workers) ABSL_LOCKS_EXCLUDED(mu_);

  // SetSlowdown()
  //
  // From now on, each call a worker takes lasts `factor` times its service
  // time (2: the backend works at half speed, a slow disk or a noisy
  // neighbour; the fleet experiment's capacity drop). Clamped to
  // [1, 1000]; calls already running keep theirs.
  void SetSlowdown(double factor) ABSL_LOCKS_EXCLUDED(mu_);

  // Stop()
  //
  // Answers the queued calls UNAVAILABLE, waits for the running ones and
  // stops the workers. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const cache::v1::GetReq* request,
                                cache::v1::GetResp* response) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work(int index, uint64_t seed);

  const int max_workers_;
  const absl::Duration service_time_;
  example_sync::Mutex mu_;
  std::condition_variable_any cv_;       // active workers wait here for calls
  std::condition_variable_any idle_cv_;  // inactive ones, for SetWorkers()
  std::deque<grpc::ServerUnaryReactor*> queue_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_);
  double slowdown_ ABSL_GUARDED_BY(mu_) = 1.0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// A backend of bounded capacity as the overload experiment and the demo
// serve it: behind the server interceptors built from `policies`, registered
// guarded, on a loopback port, with a stub on a channel of its own.
// Members are destroyed stub, server, then the interceptors' state.
struct GuardedBackend {
  std::shared_ptr<resilience::ServerResilience> resilience;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<cache::v1::CacheService::Stub> stub;
  // The loopback port the server listens on (127.0.0.1).
  int port = 0;
};

// ServeGuarded()
//
// `service` (which must outlive the result) served as GuardedBackend
// describes; an error when it cannot be guarded or the server does not
// start.
absl::StatusOr<GuardedBackend> ServeGuarded(BoundedCapacityService& service,
                                            resilience::PolicySet policies);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_BOUNDED_CAPACITY_SERVICE_H_
