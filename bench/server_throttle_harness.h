// File: bench/server_throttle_harness.h
//
// The parts of server_throttle_bench: a backend of fixed capacity, closed-loop
// clients, server-side probes, a server with or without our interceptors, and
// CPU and limiter timers. Only that bench includes it.

#ifndef GRPC_RESILIENCE_BENCH_SERVER_THROTTLE_HARNESS_H_
#define GRPC_RESILIENCE_BENCH_SERVER_THROTTLE_HARNESS_H_


#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/loopback_get_rate.h"
#include "bench/server_passthrough_interceptor.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/common/command_line.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "src/core/mutex.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/testing/test_server.h"
#include <memory>
#include <string>
#include <utility>

namespace server_throttle_bench {

using resilience::Mutex;
using resilience::MutexLock;

inline resilience::PolicySet Policies(const char* json) {
  return *resilience::PolicySet::FromJsonString(json);
}

// A backend that can work on `workers` calls at once; the rest queue.
class CapacityService final : public cache::v1::CacheService::Service {
 public:
  CapacityService(int workers, absl::Duration work) : free_(workers), work_(work) {}
  grpc::Status Get(grpc::ServerContext*, const cache::v1::GetReq*,
                   cache::v1::GetResp*) override {
    {
      MutexLock lock(&mu_);
      while (free_ == 0) cv_.Wait(&mu_);
      --free_;
    }
    absl::SleepFor(work_);
    {
      MutexLock lock(&mu_);
      ++free_;
    }
    cv_.Signal();
    return grpc::Status::OK;
  }

 private:
  Mutex mu_;
  resilience::CondVar cv_;
  int free_ ABSL_GUARDED_BY(mu_);
  const absl::Duration work_;
};

struct OverloadResult {
  std::vector<absl::Duration> ok, rejected, other;
  static absl::Duration P(std::vector<absl::Duration>& v, double q) {
    if (v.empty()) return absl::ZeroDuration();
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  }
};

inline OverloadResult RunClosedLoop(const std::string& target, int clients, absl::Duration duration,
                             bool honour_pushback) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  std::vector<OverloadResult> per_client(clients);
  const absl::Time end = absl::Now() + duration;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      while (absl::Now() < end) {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
        cache::v1::GetReq request;
        request.set_key("k");
        cache::v1::GetResp response;
        const absl::Time start = absl::Now();
        grpc::Status s = stub->Get(&context, request, &response);
        const absl::Duration latency = absl::Now() - start;
        if (s.ok()) {
          per_client[c].ok.push_back(latency);
        } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          per_client[c].rejected.push_back(latency);
          // A well-behaved client waits as the server's pushback says (as
          // grpc-resilience's retry does); the other kind retries at once.
          if (honour_pushback) {
            auto it = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
            if (it != context.GetServerTrailingMetadata().end()) {
              absl::SleepFor(absl::Milliseconds(
                  std::min(100, std::atoi(std::string(it->second.data(), it->second.size()).c_str()))));
            }
          }
        } else {
          per_client[c].other.push_back(latency);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  OverloadResult all;
  for (OverloadResult& r : per_client) {
    all.ok.insert(all.ok.end(), r.ok.begin(), r.ok.end());
    all.rejected.insert(all.rejected.end(), r.rejected.begin(), r.rejected.end());
  }
  return all;
}

// Outermost server interceptor that measures, per call, the server time from
// the call's arrival to the release of its last interceptor, for calls the
// throttle rejected.
class ServerTimeProbe final : public grpc::experimental::Interceptor {
 public:
  explicit ServerTimeProbe(std::vector<absl::Duration>* out, Mutex* mu)
      : out_(out), mu_(mu), start_(absl::Now()) {}
  ~ServerTimeProbe() override {
    if (!rejected_) return;
    const absl::Duration d = absl::Now() - start_;
    MutexLock lock(mu_);
    out_->push_back(d);
  }
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_CANCEL)) {
      return;
    }
    if (m->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      rejected_ = m->GetSendStatus().error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    }
    m->Proceed();
  }

 private:
  std::vector<absl::Duration>* const out_;
  Mutex* const mu_;
  const absl::Time start_;
  bool rejected_ = false;
};

class ServerTimeProbeFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new ServerTimeProbe(&times_, &mu_);
  }
  std::vector<absl::Duration> Take() {
    MutexLock lock(&mu_);
    return std::move(times_);
  }

 private:
  Mutex mu_;
  std::vector<absl::Duration> times_;
};

using PassThroughFactory = resilience::bench::ServerPassthroughInterceptor::Factory;

// Starts a server for `service` with `policy_json`'s interceptors (none when
// null), the service behind the guard or registered directly.
inline std::unique_ptr<resilience::testing::TestServer> StartServer(
    cache::v1::CacheService::Service* service, const char* policy_json, bool guarded,
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> last = nullptr,
    bool metrics = true) {
  resilience::testing::TestServer::Options options;
  if (policy_json != nullptr) {
    auto state = std::make_shared<resilience::ServerResilienceImpl>(
        Policies(policy_json), resilience::Clock::Real(), nullptr, metrics);
    options.interceptors = resilience::ServerInterceptorFactories(state);
    if (guarded) {
      options.configure = [state, service](grpc::ServerBuilder& builder) {
        if (!state->guards()
                 .Register(builder, service, cache::v1::CacheService::service_full_name())
                 .ok()) {
          std::abort();
        }
      };
    }
  }
  if (policy_json == nullptr || !guarded) options.services.push_back(service);
  // Send hooks run in registration order, so an interceptor registered last
  // sees the status the throttle set.
  if (last != nullptr) options.interceptors.push_back(std::move(last));
  return resilience::testing::TestServer::Start(std::move(options));
}

// Process CPU time (user + system) used so far.
inline absl::Duration CpuTime() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto of = [](const timeval& t) { return absl::Seconds(t.tv_sec) + absl::Microseconds(t.tv_usec); };
  return of(usage.ru_utime) + of(usage.ru_stime);
}

// CPU per call over `calls` sequential Gets (one warm-up call first).
inline absl::Duration CpuPerGet(const std::string& target, int calls, grpc::StatusCode expected) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  auto get = [&] {
    grpc::ClientContext context;
    cache::v1::GetReq request;
    request.set_key("k");
    cache::v1::GetResp response;
    return stub->Get(&context, request, &response).error_code();
  };
  get();
  const absl::Duration start = CpuTime();
  for (int i = 0; i < calls; ++i) {
    if (get() != expected) std::abort();
  }
  return (CpuTime() - start) / calls;
}

// The limiter alone: nanoseconds per TryAcquire() + Release() on one
// thread, with the real clock (what the interceptor does per admitted call).
inline double LimiterNanos(resilience::ConcurrencyLimiter& limiter) {
  constexpr int kIterations = 2'000'000;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kIterations; ++i) {
    if (!limiter.TryAcquire()) std::abort();
    limiter.Release(resilience::Outcome::kSuccess, absl::Microseconds(50 + i % 7));
  }
  return absl::ToDoubleNanoseconds(absl::Now() - start) / kIterations;
}

inline std::string Ms(absl::Duration d) { return absl::StrFormat("%.3f ms", absl::ToDoubleMilliseconds(d)); }

}  // namespace server_throttle_bench

#endif  // GRPC_RESILIENCE_BENCH_SERVER_THROTTLE_HARNESS_H_
