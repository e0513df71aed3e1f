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

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/server_throttle_harness.h"

ABSL_FLAG(double, seconds, 2, "Length of each measured round.");
ABSL_FLAG(bool, overhead_only, false, "Measure only the overhead (part 1).");

namespace {

using server_throttle_bench::CapacityService;
using server_throttle_bench::CpuPerGet;
using server_throttle_bench::CpuTime;
using server_throttle_bench::LimiterNanos;
using server_throttle_bench::Ms;
using server_throttle_bench::OverloadResult;
using server_throttle_bench::PassThroughFactory;
using server_throttle_bench::Policies;
using server_throttle_bench::RunClosedLoop;
using server_throttle_bench::ServerTimeProbeFactory;
using server_throttle_bench::StartServer;

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
