#include "examples/cache_service/bounded_capacity_service.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace cache_service {

BoundedCapacityService::BoundedCapacityService(int max_workers, int workers,
                                               absl::Duration service_time, uint64_t seed)
    : max_workers_(std::max(1, max_workers)),
      service_time_(service_time),
      active_(std::clamp(workers, 1, std::max(1, max_workers))) {
  for (int i = 0; i < max_workers_; ++i) {
    threads_.emplace_back([this, i, seed] { Work(i, seed + static_cast<uint64_t>(i)); });
  }
}

BoundedCapacityService::~BoundedCapacityService() { Stop(); }

void BoundedCapacityService::SetWorkers(int workers) {
  example_sync::MutexLock lock(&mu_);
  active_ = std::clamp(workers, 1, max_workers_);
  cv_.notify_all();
  idle_cv_.notify_all();
}

void BoundedCapacityService::SetSlowdown(double factor) {
  example_sync::MutexLock lock(&mu_);
  slowdown_ = std::clamp(factor, 1.0, 1000.0);
}

void BoundedCapacityService::Stop() {
  std::deque<grpc::ServerUnaryReactor*> queued;
  {
    example_sync::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    queued.swap(queue_);
    cv_.notify_all();
    idle_cv_.notify_all();
  }
  for (grpc::ServerUnaryReactor* reactor : queued) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "backend stopping"));
  }
  for (std::thread& t : threads_) t.join();
}

grpc::ServerUnaryReactor* BoundedCapacityService::Get(grpc::CallbackServerContext* context,
                                                      const cache::v1::GetReq*,
                                                      cache::v1::GetResp*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  {
    example_sync::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(reactor);
      cv_.notify_one();
      return reactor;
    }
  }
  reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "backend stopping"));
  return reactor;
}

void BoundedCapacityService::Work(int index, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  while (true) {
    grpc::ServerUnaryReactor* reactor;
    double slowdown;
    {
      example_sync::MutexLock lock(&mu_);
      // Only the first active_ workers take calls; the others wait apart,
      // so that a call's notify_one() always wakes an active one.
      while (!stopping_ && (queue_.empty() || index >= active_)) {
        (index >= active_ ? idle_cv_ : cv_).wait(mu_);
      }
      if (stopping_) return;
      reactor = queue_.front();
      queue_.pop_front();
      slowdown = slowdown_;
      // Another active worker may take the next one.
      if (!queue_.empty()) cv_.notify_one();
    }
    absl::SleepFor(service_time_ * (slowdown * (0.5 + uniform(random))));
    reactor->Finish(grpc::Status::OK);
  }
}

absl::StatusOr<GuardedBackend> ServeGuarded(BoundedCapacityService& service,
                                            resilience::PolicySet policies) {
  GuardedBackend backend;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  backend.resilience = resilience::AddServerInterceptors(builder, std::move(policies));
  if (absl::Status s =
          backend.resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
      !s.ok()) {
    return s;
  }
  backend.server = builder.BuildAndStart();
  if (backend.server == nullptr || port == 0) {
    return absl::UnavailableError("the bounded-capacity backend's server did not start");
  }
  backend.port = port;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  backend.stub = cache::v1::CacheService::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(), args));
  return backend;
}

}  // namespace cache_service
