// The fleet-wide rate limit's cost per call, as ratios within one run
// (docs/global-rate-limit.md):
//
//  1. Over loopback: unary Get calls/s through a server whose global limit
//     (throttle.global, leases from Redis) never binds, against the same
//     server with a local token bucket (throttle.ratePerSecond) that never
//     binds; alternating rounds, median calls/s and the range of the
//     per-round ratios. Target: >= 0.95.
//  2. The admission decision alone, one thread: ns per TryAcquire() of a
//     GlobalRateLimiter fed by a live RedisLeaseSource against a TokenBucket.
//  3. The same for a rate per caller key (PerCallerLimits::TryAcquire(), 4
//     keys in turn): a fleet-wide rate per key (throttle.perCaller.global,
//     leases from Redis through one worker) against a per-server rate per
//     key (throttle.perCaller.ratePerSecond).
//
//   global_rate_limit_bench --redis=HOST:PORT [--seconds=2] [--calls=N]
//                           [--only=per_caller_local|per_caller_fleet]
//
// --only runs part 3's one variant alone, for `valgrind --tool=callgrind`
// (instructions per call: the difference between two --calls values over
// the difference in calls).
//
// bench/run_global_rate_limit_bench.sh starts a redis-server for it. --help
// prints the flags and exits 0; a bad flag exits 2 with one line.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/loopback_get_rate.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/cache_store.h"
#include "examples/common/command_line.h"
#include "src/global_limits/global_rate_limit.h"
#include "grpc_resilience/redis_limits.h"
#include "src/redis_limits/redis_fleet_limit_backend.h"
#include "src/limits/per_caller_limits.h"
#include "src/limits/token_bucket.h"
#include "src/policy/global_throttle_policy.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/testing/test_server.h"

ABSL_FLAG(std::string, redis, "", "host:port of a Redis server (required).");
ABSL_FLAG(double, seconds, 2, "Length of each measured round.");
ABSL_FLAG(int64_t, calls, 20'000'000, "TryAcquire() calls per run of parts 2 and 3.");
ABSL_FLAG(std::string, only, "",
          "per_caller_local or per_caller_fleet: part 3's one variant alone, one run.");

namespace {

struct Server {
  std::shared_ptr<resilience::ServerResilienceImpl> state;
  std::unique_ptr<resilience::testing::TestServer> server;
};

Server Start(cache_service::CacheServiceImpl* service, const std::string& policy) {
  absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(policy);
  if (!policies.ok()) {
    std::fprintf(stderr, "global_rate_limit_bench: %s\n", policies.status().ToString().c_str());
    std::exit(1);
  }
  Server s;
  s.state = std::make_shared<resilience::ServerResilienceImpl>(
      *std::move(policies), resilience::Clock::Real(), nullptr, /*metrics=*/true,
      resilience::RedisFleetLimits());
  resilience::testing::TestServer::Options options;
  options.interceptors = resilience::ServerInterceptorFactories(s.state);
  auto state = s.state;
  options.configure = [state, service](grpc::ServerBuilder& builder) {
    if (!state->guards()
             .Register(builder, service, cache::v1::CacheService::service_full_name())
             .ok()) {
      std::abort();
    }
  };
  s.server = resilience::testing::TestServer::Start(std::move(options));
  return s;
}

// The lines of the server's metrics that start with `prefix`.
std::string MetricLines(resilience::ServerResilienceImpl& state, absl::string_view prefix) {
  resilience::PrometheusText text;
  state.AppendMetrics(text);
  std::string out;
  const std::string body = text.Finish();
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (absl::StartsWith(line, prefix)) absl::StrAppend(&out, "    ", line, "\n");
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per TryAcquire() over `n` calls.
template <typename F>
double NsPerCall(F&& try_acquire, int64_t n) {
  const absl::Time start = absl::Now();
  int64_t admitted = 0;
  for (int64_t i = 0; i < n; ++i) admitted += try_acquire() ? 1 : 0;
  const double ns = absl::ToDoubleNanoseconds(absl::Now() - start) / static_cast<double>(n);
  if (admitted == 0) std::abort();
  return ns;
}

// Where the admitted calls' tokens came from, and the round trips.
void PrintLeaseStats(const resilience::GlobalRateLimiterStats& stats, int64_t round_trips) {
  std::printf("    leased calls %lld, local-share calls %lld, rejected %lld, round trips %lld\n",
              static_cast<long long>(stats.admitted_leased),
              static_cast<long long>(stats.admitted_local), static_cast<long long>(stats.rejected),
              static_cast<long long>(round_trips));
}

// Part 3's limits: a rate per key that never binds, per server (`fleet`
// false) or for the fleet with leases from `redis` (host:port).
std::unique_ptr<resilience::PerCallerLimits> PerCaller(bool fleet, const std::string& host,
                                                       int port) {
  resilience::PerCallerSettings settings;
  settings.header = "x-tenant-id";
  if (!fleet) {
    settings.limits.rate_per_second = 1e9;
    settings.limits.burst = 1'000'000'000;
    auto limits = resilience::PerCallerLimits::Create(settings.limits, resilience::Clock::Real());
    if (!limits.ok()) std::abort();
    return *std::move(limits);
  }
  resilience::GlobalThrottleSettings g;
  g.host = host;
  g.port = port;
  g.key = absl::StrCat("bench-per-caller:", absl::ToUnixNanos(absl::Now()));
  g.rate_per_second = 1e9;
  g.burst = 1'000'000'000;
  g.expected_replicas = 1;
  settings.global = g;
  settings.limits.fleet = resilience::LimiterOptions(g);
  auto limits = resilience::PerCallerFleetLimits(settings, "bench", resilience::Clock::Real(),
                                                 resilience::RedisFleetLimitBackend());
  if (!limits.ok()) std::abort();
  return *std::move(limits);
}

// One PerCallerLimits::TryAcquire() of 4 keys in turn; true when admitted.
class PerCallerCalls {
 public:
  explicit PerCallerCalls(resilience::PerCallerLimits& limits) : limits_(limits) {}
  bool operator()() {
    static const char* const kKeys[] = {"tenant-0", "tenant-1", "tenant-2", "tenant-3"};
    return limits_.TryAcquire(kKeys[next_++ & 3], shares_, resilience::Criticality::kCritical)
               .verdict == resilience::PerCallerLimits::Verdict::kAdmitted;
  }

 private:
  resilience::PerCallerLimits& limits_;
  const resilience::CriticalityShares shares_;
  unsigned next_ = 0;
};

// Until each of the 4 keys of a fleet limit leased (at most 5 s).
void AwaitLeases(resilience::PerCallerLimits& limits) {
  PerCallerCalls call(limits);
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (limits.FleetStats().leases < 4 && absl::Now() < until) {
    for (int i = 0; i < 4; ++i) call();
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace

constexpr char kUsage[] =
    "The fleet-wide rate limit's per-call cost against a local token bucket, as\n"
    "ratios within one run (both limits never bind).\n\n"
    "  global_rate_limit_bench --redis=HOST:PORT [--seconds=2]";

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const std::string redis = absl::GetFlag(FLAGS_redis);
  int port = 0;
  const size_t colon = redis.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(redis.substr(colon + 1), &port)) {
    return example_cli::UsageError(absl::StrCat("--redis: must be host:port, got \"", redis, "\""));
  }
  if (const double seconds = absl::GetFlag(FLAGS_seconds); !(seconds > 0 && seconds <= 3600)) {
    return example_cli::UsageError(absl::StrCat("--seconds: must be in (0, 3600], got ", seconds));
  }
  const absl::Duration round = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  const int64_t calls = absl::GetFlag(FLAGS_calls);
  if (calls < 1) return example_cli::UsageError(absl::StrCat("--calls: must be >= 1, got ", calls));
  const std::string only = absl::GetFlag(FLAGS_only);
  const std::string host = redis.substr(0, colon);
  if (!only.empty()) {
    if (only != "per_caller_local" && only != "per_caller_fleet") {
      return example_cli::UsageError(absl::StrCat(
          "--only: must be per_caller_local or per_caller_fleet, got \"", only, "\""));
    }
    auto limits = PerCaller(only == "per_caller_fleet", host, port);
    if (only == "per_caller_fleet") AwaitLeases(*limits);
    const double ns = NsPerCall(PerCallerCalls(*limits), calls);
    std::printf("%s: %lld calls, %.1f ns per call\n", only.c_str(), static_cast<long long>(calls),
                ns);
    return 0;
  }

  // 1. Over loopback. The rates are far above what the clients reach.
  const std::string local_policy = R"({"methodConfig": [{"name": [{}],
      "throttle": {"ratePerSecond": 1e7, "burst": 10000000}}]})";
  const std::string global_policy = absl::StrCat(
      R"({"methodConfig": [{"name": [{}], "throttle": {"global": {"redis": ")", redis,
      R"(", "key": "bench:)", absl::ToUnixNanos(absl::Now()),
      R"(", "ratePerSecond": 1e7, "burst": 10000000, "expectedReplicas": 1}}}]})");
  cache_service::CacheStore store_a({}), store_b({});
  cache_service::CacheServiceImpl local_service(&store_a), global_service(&store_b);
  Server local = Start(&local_service, local_policy);
  Server global = Start(&global_service, global_policy);
  // Warm-up, and the first leases.
  bench::CallsPerSecond(local.server->address(), absl::Milliseconds(300));
  bench::CallsPerSecond(global.server->address(), absl::Milliseconds(300));
  std::vector<double> local_rates, global_rates, ratios;
  for (int i = 0; i < 5; ++i) {
    local_rates.push_back(bench::CallsPerSecond(local.server->address(), round));
    global_rates.push_back(bench::CallsPerSecond(global.server->address(), round));
    ratios.push_back(global_rates.back() / local_rates.back());
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("unary Get, 8 closed-loop clients, median of 5 alternating rounds:\n");
  std::printf("    %-40s %8.0f calls/s\n", "local token bucket (ratePerSecond)", Median(local_rates));
  std::printf("    %-40s %8.0f calls/s  ratio %.3f (%.3f-%.3f)  target >= 0.95\n",
              "global limit (Redis leases)", Median(global_rates),
              Median(global_rates) / Median(local_rates), ratios.front(), ratios.back());
  std::printf("  the global limit's state after the run:\n%s",
              MetricLines(*global.state, "grpc_resilience_server_global_limit_").c_str());
  local.server->Shutdown();
  global.server->Shutdown();

  // 2. The decision alone.
  resilience::GlobalThrottleSettings settings;
  settings.host = redis.substr(0, colon);
  settings.port = port;
  settings.key = absl::StrCat("bench-decision:", absl::ToUnixNanos(absl::Now()));
  settings.rate_per_second = 1e9;
  settings.burst = 1'000'000'000;
  settings.expected_replicas = 1;
  auto limit = resilience::GlobalRateLimit::Create(settings, "bench", resilience::Clock::Real(),
                                                   resilience::RedisFleetLimitBackend());
  auto bucket = resilience::TokenBucket::Create(1e9, 1'000'000'000, resilience::Clock::Real());
  if (!limit.ok() || !bucket.ok()) std::abort();
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while ((*limit)->limiter().mode() != resilience::GlobalRateLimiter::Mode::kGlobal &&
         absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const int64_t kCalls = calls;
  std::vector<double> bucket_ns, global_ns;
  for (int i = 0; i < 3; ++i) {
    bucket_ns.push_back(NsPerCall([&] { return (*bucket)->TryAcquire(); }, kCalls));
    global_ns.push_back(NsPerCall([&] { return (*limit)->TryAcquire(nullptr); }, kCalls));
  }
  const resilience::GlobalRateLimiterStats stats = (*limit)->limiter().Stats();
  std::printf("TryAcquire(), one thread, median of 3 alternating runs of %lld calls:\n",
              static_cast<long long>(kCalls));
  std::printf("    %-40s %6.1f ns\n", "TokenBucket", Median(bucket_ns));
  std::printf("    %-40s %6.1f ns  speed ratio %.2f (bucket ns / global ns)\n",
              "GlobalRateLimiter (Redis leases)", Median(global_ns),
              Median(bucket_ns) / Median(global_ns));
  PrintLeaseStats(stats, stats.leases);

  // 3. A rate per caller key: per server, or for the fleet.
  auto per_server = PerCaller(false, host, port);
  auto per_fleet = PerCaller(true, host, port);
  AwaitLeases(*per_fleet);
  std::vector<double> per_server_ns, per_fleet_ns;
  for (int i = 0; i < 3; ++i) {
    per_server_ns.push_back(NsPerCall(PerCallerCalls(*per_server), kCalls));
    per_fleet_ns.push_back(NsPerCall(PerCallerCalls(*per_fleet), kCalls));
  }
  const resilience::GlobalRateLimiterStats fleet = per_fleet->FleetStats();
  std::printf("PerCallerLimits::TryAcquire(), 4 keys in turn, one thread, median of 3:\n");
  std::printf("    %-40s %6.1f ns\n", "rate per key, per server", Median(per_server_ns));
  std::printf("    %-40s %6.1f ns  ratio %.2f (fleet ns / per-server ns)\n",
              "rate per key, fleet (Redis leases)", Median(per_fleet_ns),
              Median(per_fleet_ns) / Median(per_server_ns));
  PrintLeaseStats(fleet, per_fleet->fleet_queue()->leases());
  return 0;
}
