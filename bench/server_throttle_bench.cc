// Server throttling, measured over loopback in one run (ratios, not absolute
// times):
//
//  1. Overhead: unary Get through a server whose throttle never binds (with
//     metrics on, the default, and off), and through a server whose policy
//     does not cover Get (metrics on: only the metrics interceptor), vs the
//     same server with no interceptors (alternating rounds, median calls/s
//     and the range of the per-round ratios); and through a throttle.adaptive
//     limit that never binds but does all its work.
//  2. Overload: a backend with a capacity of 4 calls at once (4 workers, 2 ms
//     of work each) under 4x its capacity in closed-loop clients, with no
//     throttle and with maxConcurrency = 4. Reports admitted-call p99 against
//     the p99 at exactly its capacity, and how fast rejections come back.
//  3. Cost of a rejected call: process CPU (client and server, one process)
//     per rejected Get, with the service registered behind the guard (the
//     handler never runs) and directly (the handler runs, as before the
//     guard), against a served Get of a server without interceptors.
//
// Throttled servers register their service with RegisterGuardedService(),
// as users do.
//
//   server_throttle_bench [--seconds=2] [--overhead_only]
//
// --help prints the flags and exits 0; a bad flag exits 2 with one line.

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

ABSL_FLAG(double, seconds, 2, "Length of each measured round.");
ABSL_FLAG(bool, overhead_only, false, "Measure only the overhead (part 1).");

namespace {

using resilience::Mutex;
using resilience::MutexLock;

resilience::PolicySet Policies(const char* json) {
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

OverloadResult RunClosedLoop(const std::string& target, int clients, absl::Duration duration,
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

class PassThrough final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_CANCEL)) {
      return;
    }
    m->Proceed();
  }
};
class PassThroughFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new PassThrough();
  }
};

// Starts a server for `service` with `policy_json`'s interceptors (none when
// null), the service behind the guard or registered directly.
std::unique_ptr<resilience::testing::TestServer> StartServer(
    cache::v1::CacheService::Service* service, const char* policy_json, bool guarded,
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> last = nullptr,
    bool metrics = true) {
  resilience::testing::TestServer::Options options;
  if (policy_json != nullptr) {
    auto state = std::make_shared<resilience::ServerResilience>(
        Policies(policy_json), resilience::Clock::Real(), nullptr, metrics);
    options.interceptors = resilience::ServerInterceptorFactories(state);
    if (guarded) {
      options.configure = [state, service](grpc::ServerBuilder& builder) {
        if (!state->RegisterGuardedService<cache::v1::CacheService>(builder, service).ok()) {
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
absl::Duration CpuTime() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto of = [](const timeval& t) { return absl::Seconds(t.tv_sec) + absl::Microseconds(t.tv_usec); };
  return of(usage.ru_utime) + of(usage.ru_stime);
}

// CPU per call over `calls` sequential Gets (one warm-up call first).
absl::Duration CpuPerGet(const std::string& target, int calls, grpc::StatusCode expected) {
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
double LimiterNanos(resilience::ConcurrencyLimiter& limiter) {
  constexpr int kIterations = 2'000'000;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kIterations; ++i) {
    if (!limiter.TryAcquire()) std::abort();
    limiter.Release(resilience::Outcome::kSuccess, absl::Microseconds(50 + i % 7));
  }
  return absl::ToDoubleNanoseconds(absl::Now() - start) / kIterations;
}

std::string Ms(absl::Duration d) { return absl::StrFormat("%.3f ms", absl::ToDoubleMilliseconds(d)); }

}  // namespace

constexpr char kUsage[] =
    "Server throttling over loopback, as ratios within one run: the overhead of a\n"
    "throttle that never binds, admitted-call latency under 4x overload, and the CPU\n"
    "cost of a rejected call.\n\n"
    "  server_throttle_bench [--seconds=2] [--overhead_only]";

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (const double seconds = absl::GetFlag(FLAGS_seconds); !(seconds > 0 && seconds <= 3600)) {
    return example_cli::UsageError(absl::StrCat("--seconds: must be in (0, 3600], got ", seconds));
  }
  const absl::Duration round = absl::Seconds(absl::GetFlag(FLAGS_seconds));

  // 1. Overhead of a throttle that never binds, beside gRPC's own cost of
  // having any server interceptor at all (a pass-through one).
  cache_service::CacheStore store_a({}), store_b({}), store_c({});
  cache_service::CacheServiceImpl bare_service(&store_a), passthrough_service(&store_b),
      throttled_service(&store_c);
  auto start = [](cache_service::CacheServiceImpl* service,
                  resilience::testing::ServerInterceptorFactories interceptors) {
    resilience::testing::TestServer::Options options;
    options.services.push_back(service);
    options.interceptors = std::move(interceptors);
    return resilience::testing::TestServer::Start(std::move(options));
  };
  auto bare = start(&bare_service, {});
  resilience::testing::ServerInterceptorFactories passthrough;
  passthrough.push_back(std::make_unique<PassThroughFactory>());
  auto with_passthrough = start(&passthrough_service, std::move(passthrough));
  constexpr char kNonBinding[] = R"({"methodConfig": [{"name": [{}],
      "throttle": {"maxConcurrency": 100000, "ratePerSecond": 1e8, "burst": 100000000}}]})";
  cache_service::CacheStore store_g({}), store_h({});
  cache_service::CacheServiceImpl throttled_off_service(&store_g), metrics_only_service(&store_h);
  auto throttled = StartServer(&throttled_service, kNonBinding, /*guarded=*/true);
  auto throttled_off = StartServer(&throttled_off_service, kNonBinding, /*guarded=*/true, nullptr,
                                   /*metrics=*/false);
  // A policy that does not cover Get: the metrics interceptor only.
  auto metrics_only = StartServer(&metrics_only_service, "{}", /*guarded=*/true);
  // An adaptive limit that never binds (its minLimit is above the 8
  // clients) but does all its work: samples every call, closes windows,
  // measures its baseline.
  constexpr char kAdaptiveNonBinding[] = R"({"methodConfig": [{"name": [{}],
      "throttle": {"adaptive": {"minLimit": 64, "initialLimit": 1000, "maxLimit": 100000}}}]})";
  cache_service::CacheStore store_i({});
  cache_service::CacheServiceImpl adaptive_service(&store_i);
  auto adaptive = StartServer(&adaptive_service, kAdaptiveNonBinding, /*guarded=*/true);
  struct Row {
    const char* name;
    std::string address;
    std::vector<double> rates;
  };
  std::vector<Row> rows = {
      {"no interceptor", bare->address(), {}},
      {"pass-through interceptor", with_passthrough->address(), {}},
      {"non-binding throttle", throttled->address(), {}},
      {"non-binding throttle, no metrics", throttled_off->address(), {}},
      {"no policy, metrics only", metrics_only->address(), {}},
      {"non-binding adaptive limit", adaptive->address(), {}},
  };
  for (int i = 0; i < 5; ++i) {
    for (Row& row : rows) row.rates.push_back(bench::CallsPerSecond(row.address, round));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("unary Get, 8 closed-loop clients, median of 5 alternating rounds (ratio: of the\n"
              "medians; range: of the ratios to no interceptor within each round):\n");
  for (size_t k = 0; k < rows.size(); ++k) {
    const Row& row = rows[k];
    std::vector<double> ratios;
    for (size_t r = 0; r < row.rates.size(); ++r) ratios.push_back(row.rates[r] / rows[0].rates[r]);
    std::sort(ratios.begin(), ratios.end());
    std::printf("    %-34s %8.0f calls/s  ratio %.3f (%.3f-%.3f)%s\n", row.name, median(row.rates),
                median(row.rates) / median(rows[0].rates), ratios.front(), ratios.back(),
                k == 2 || k == 5 ? "  target >= 0.97" : "");
  }
  {
    resilience::FixedConcurrencyLimiter fixed(100000);
    resilience::GradientConcurrencyLimiter::Options options;
    options.min_limit = 64;
    options.initial_limit = 1000;
    options.max_limit = 100000;
    auto gradient = resilience::GradientConcurrencyLimiter::Create(options, resilience::Clock::Real());
    const double fixed_ns = LimiterNanos(fixed);
    const double gradient_ns = LimiterNanos(**gradient);
    std::printf("the limiter alone, TryAcquire() + Release() on one thread: fixed %.1f ns, "
                "adaptive (gradient) %.1f ns; one Get here takes %.1f us of wall time per "
                "client\n",
                fixed_ns, gradient_ns, 8e6 / median(rows[0].rates));
  }
  bare->Shutdown();
  with_passthrough->Shutdown();
  throttled->Shutdown();
  throttled_off->Shutdown();
  metrics_only->Shutdown();
  adaptive->Shutdown();
  if (absl::GetFlag(FLAGS_overhead_only)) return 0;

  // 2. Overload.
  constexpr int kCapacity = 4;
  std::vector<absl::Duration> rejection_server_times;
  auto run = [&](const char* policy_json, int clients, bool honour_pushback) {
    CapacityService service(kCapacity, absl::Milliseconds(2));
    ServerTimeProbeFactory* probe = nullptr;
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> last;
    if (policy_json != nullptr) last.reset(probe = new ServerTimeProbeFactory());
    auto server = StartServer(&service, policy_json, /*guarded=*/true, std::move(last));
    OverloadResult result = RunClosedLoop(server->address(), clients, round, honour_pushback);
    server->Shutdown(absl::Seconds(1));
    if (probe != nullptr) rejection_server_times = probe->Take();
    return result;
  };
  const char* kThrottle = R"({"methodConfig": [{"name": [{}], "throttle": {"maxConcurrency": 4}}]})";
  OverloadResult at_capacity = run(nullptr, kCapacity, true);
  OverloadResult overload_bare = run(nullptr, 4 * kCapacity, true);
  const absl::Duration p99_capacity = OverloadResult::P(at_capacity.ok, 0.99);
  const absl::Duration p99_bare = OverloadResult::P(overload_bare.ok, 0.99);
  std::printf("backend capacity %d calls at once, 2 ms each; p99 at capacity (%d clients): %s\n",
              kCapacity, kCapacity, Ms(p99_capacity).c_str());
  std::printf("4x overload (%d clients), no throttle: p99 %s = %.2fx, %zu calls served\n",
              4 * kCapacity, Ms(p99_bare).c_str(), absl::FDivDuration(p99_bare, p99_capacity),
              overload_bare.ok.size());
  for (bool honour : {true, false}) {
    OverloadResult r = run(kThrottle, 4 * kCapacity, honour);
    const absl::Duration p99_admitted = OverloadResult::P(r.ok, 0.99);
    std::printf("4x overload, maxConcurrency %d, clients %s pushback:\n"
                "    admitted p99 %s = %.2fx of the p99 at capacity (target <= 1.5x); "
                "%zu served, %zu rejected\n"
                "    rejected calls: server time p50 %s, p99 %s; client round trip p50 %s\n",
                kCapacity, honour ? "honouring" : "ignoring", Ms(p99_admitted).c_str(),
                absl::FDivDuration(p99_admitted, p99_capacity), r.ok.size(), r.rejected.size(),
                Ms(OverloadResult::P(rejection_server_times, 0.5)).c_str(),
                Ms(OverloadResult::P(rejection_server_times, 0.99)).c_str(),
                Ms(OverloadResult::P(r.rejected, 0.5)).c_str());
  }

  // 3. CPU per rejected call.
  constexpr int kCalls = 5000;
  const char* kRejectAll =
      R"({"methodConfig": [{"name": [{}], "throttle": {"ratePerSecond": 0.001, "burst": 1}}]})";
  cache_service::CacheStore store_d({}), store_e({}), store_f({});
  for (auto* store : {&store_d, &store_e, &store_f}) {
    if (!store->Store("k", std::string(1024, 'v')).ok()) std::abort();
  }
  cache_service::CacheServiceImpl served_service(&store_d), guarded_service(&store_e),
      unguarded_service(&store_f);
  auto served = StartServer(&served_service, nullptr, false);
  auto guarded = StartServer(&guarded_service, kRejectAll, true);
  auto unguarded = StartServer(&unguarded_service, kRejectAll, false);
  std::vector<double> served_us, guarded_us, unguarded_us;
  for (int i = 0; i < 5; ++i) {
    served_us.push_back(absl::ToDoubleMicroseconds(
        CpuPerGet(served->address(), kCalls, grpc::StatusCode::OK)));
    guarded_us.push_back(absl::ToDoubleMicroseconds(
        CpuPerGet(guarded->address(), kCalls, grpc::StatusCode::RESOURCE_EXHAUSTED)));
    unguarded_us.push_back(absl::ToDoubleMicroseconds(
        CpuPerGet(unguarded->address(), kCalls, grpc::StatusCode::RESOURCE_EXHAUSTED)));
  }
  for (auto* v : {&served_us, &guarded_us, &unguarded_us}) std::sort(v->begin(), v->end());
  std::printf("process CPU per sequential Get of a 1 KiB value (client + server), median of 5:\n"
              "    served, no interceptors                 %.1f us\n"
              "    rejected, guarded (handler never runs)  %.1f us  ratio %.3f\n"
              "    rejected, unguarded (handler runs)      %.1f us  ratio %.3f\n",
              served_us[2], guarded_us[2], guarded_us[2] / served_us[2], unguarded_us[2],
              unguarded_us[2] / served_us[2]);
  return 0;
}
