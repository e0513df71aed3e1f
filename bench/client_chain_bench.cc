// The client chain's cost on the success path, measured in one run over
// loopback: unary Get on a bare channel, with breaker only, breaker +
// timeout, the full chain (retry -> timeout -> breaker) with metrics on and
// off, a method without a policy with metrics on (the metrics-only
// interceptor) and off (no interceptor), and the floor of any retry
// interceptor (one that hijacks and re-issues once, nothing else), and a
// breaker with a bulkhead enforcing and in shadow mode (docs/shadow-mode.md).
// Alternating rounds; reports the median calls/s, p50 and p99 of each and
// the ratios to bare (median and range of the per-round ratios).
//
//   client_chain_bench [--seconds=2] [--rounds=5] [--concurrency=8] [--only=N]
//                      [--calls=N]
//
// With --only and --calls, one round of exactly that many calls (for
// callgrind: two counts, the difference per call).
//
// --help prints the flags and exits 0; a bad flag exits 2 with one line.

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/hijack_once_interceptor.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/load_generator.h"
#include "examples/common/command_line.h"
#include "grpc_resilience/resilient_channel.h"
#include "tests/testing/test_server.h"

ABSL_FLAG(double, seconds, 2, "Length of each round.");
ABSL_FLAG(int, rounds, 5, "Rounds per configuration (alternating).");
ABSL_FLAG(int, concurrency, 8, "Closed-loop clients.");
ABSL_FLAG(int, only, -1, "Run only this configuration (0-9), e.g. under perf.");
ABSL_FLAG(int64_t, calls, 0,
          "With --only: one round of exactly this many calls instead of --seconds (0: off).");

namespace {

struct Config {
  Config(const char* name, const char* policy, bool metrics = true, bool hijack_floor = false)
      : name(name), policy(policy), metrics(metrics), hijack_floor(hijack_floor) {}
  const char* name;
  const char* policy;  // null: bare channel
  bool metrics;        // ClientResilience::Options::metrics
  // No policy: the floor of any retry interceptor, one that hijacks and
  // re-issues once (bench/hijack_once_interceptor.h).
  bool hijack_floor;
  std::vector<double> rates;
  std::vector<double> p50_ms, p99_ms;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

constexpr char kUsage[] =
    "The client chain's cost on the success path: unary Get over loopback on a bare\n"
    "channel, with breaker only, breaker + timeout, the full chain with metrics on and\n"
    "off, a method without a policy with metrics on and off, and the floor of any\n"
    "retry interceptor (hijack and re-issue once), and a breaker with a bulkhead\n"
    "enforcing and in shadow mode, in alternating rounds; prints the median calls/s,\n"
    "p50 and p99 of each and the ratios to bare.\n\n"
    "  client_chain_bench [--seconds=2] [--rounds=5] [--concurrency=8] [--only=N]\n"
    "                     [--calls=N]";

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (const double seconds = absl::GetFlag(FLAGS_seconds); !(seconds > 0 && seconds <= 3600)) {
    return example_cli::UsageError(absl::StrCat("--seconds: must be in (0, 3600], got ", seconds));
  }
  if (const int rounds = absl::GetFlag(FLAGS_rounds); rounds < 1) {
    return example_cli::UsageError(absl::StrCat("--rounds: must be >= 1, got ", rounds));
  }
  if (const int concurrency = absl::GetFlag(FLAGS_concurrency);
      concurrency < 1 || concurrency > 1024) {
    return example_cli::UsageError(
        absl::StrCat("--concurrency: must be in [1, 1024], got ", concurrency));
  }
  if (const int only = absl::GetFlag(FLAGS_only); only < -1 || only > 9) {
    return example_cli::UsageError(
        absl::StrCat("--only: must be a configuration in [0, 9] (or -1: all), got ", only));
  }
  if (const int64_t calls = absl::GetFlag(FLAGS_calls);
      calls < 0 || (calls > 0 && absl::GetFlag(FLAGS_only) < 0)) {
    return example_cli::UsageError(
        absl::StrCat("--calls: must be >= 0, and needs --only, got ", calls));
  }
  cache_service::CacheStore store({});
  cache_service::CacheServiceImpl service(&store);
  resilience::testing::TestServer::Options options;
  options.services.push_back(&service);
  auto server = resilience::testing::TestServer::Start(std::move(options));

  constexpr char kFullChain[] = R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
      "timeout": "10s", "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "1s",
                                        "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
      "breaker": {"sre": {}}}]})";
  constexpr char kNoPolicy[] = "{}";  // Get has no policy
  std::vector<Config> configs = {
      {"bare channel", nullptr},
      {"breaker only", R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
          "breaker": {"sre": {}}}]})"},
      {"breaker + timeout", R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
          "timeout": "1s", "breaker": {"sre": {}}}]})"},
      {"full chain", kFullChain},
      {"full chain, no metrics", kFullChain, false},
      {"no policy", kNoPolicy},
      {"no policy, no metrics", kNoPolicy, false},
      {"hijack floor", nullptr, false, true},
      {"breaker+bulkhead enforce", R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
          "breaker": {"sre": {}}, "bulkhead": {"maxConcurrency": 64}}]})"},
      {"breaker+bulkhead shadow", R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
          "breaker": {"sre": {}, "enforcement": "shadow"},
          "bulkhead": {"maxConcurrency": 64, "enforcement": "shadow"}}]})"},
  };
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const Config& c : configs) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    if (c.hijack_floor) {
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> floor;
      floor.push_back(std::make_unique<resilience::bench::HijackOnceFactory>(/*reissue=*/true));
      channels.push_back(grpc::experimental::CreateCustomChannelWithInterceptors(
          server->address(), grpc::InsecureChannelCredentials(), args, std::move(floor)));
    } else if (c.policy == nullptr) {
      channels.push_back(grpc::CreateCustomChannel(server->address(),
                                                   grpc::InsecureChannelCredentials(), args));
    } else {
      resilience::ResilientChannelOptions options;
      options.args = args;
      options.resilience.metrics = c.metrics;
      channels.push_back(resilience::CreateResilientChannel(
                             server->address(), grpc::InsecureChannelCredentials(),
                             *resilience::PolicySet::FromJsonString(c.policy), std::move(options))
                             .channel);
    }
  }
  cache_service::LoadOptions load;
  load.calls = 0;
  load.duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  load.concurrency = absl::GetFlag(FLAGS_concurrency);
  load.get_fraction = 1.0;
  load.key_space = 100;
  // A caller deadline well past the policy's timeout, so that the timeout
  // is really armed on every call.
  load.call_timeout = absl::Seconds(30);
  if (const int64_t calls = absl::GetFlag(FLAGS_calls); calls > 0) {
    load.calls = calls;
    load.duration = absl::ZeroDuration();
  }
  const int rounds = absl::GetFlag(FLAGS_calls) > 0 ? 1 : absl::GetFlag(FLAGS_rounds);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const int only = absl::GetFlag(FLAGS_only);
      if (only >= 0 && static_cast<size_t>(only) != i) continue;
      auto stub = cache::v1::CacheService::NewStub(channels[i]);
      cache_service::LoadReport r = cache_service::RunLoad(*stub, load);
      configs[i].rates.push_back(r.calls / absl::ToDoubleSeconds(r.elapsed));
      configs[i].p50_ms.push_back(absl::ToDoubleMilliseconds(r.Percentile(0.5)));
      configs[i].p99_ms.push_back(absl::ToDoubleMilliseconds(r.Percentile(0.99)));
    }
  }
  if (const int only = absl::GetFlag(FLAGS_only); only >= 0) {
    const Config& c = configs.at(only);
    std::printf("%s: %.0f calls/s\n", c.name, Median(c.rates));
    server->Shutdown();
    return 0;
  }
  const double bare = Median(configs[0].rates);
  std::printf("unary Get over loopback, %d closed-loop clients, median of %d alternating rounds\n",
              load.concurrency, absl::GetFlag(FLAGS_rounds));
  std::printf("(ratio: of the medians; range: of the ratios to bare within each round)\n");
  std::printf("%-24s %12s %8s %15s %10s %10s\n", "configuration", "calls/s", "ratio",
              "range", "p50 ms", "p99 ms");
  for (const Config& c : configs) {
    std::vector<double> ratios;
    for (size_t r = 0; r < c.rates.size(); ++r) ratios.push_back(c.rates[r] / configs[0].rates[r]);
    std::sort(ratios.begin(), ratios.end());
    std::printf("%-24s %12.0f %8.3f %7.3f-%-7.3f %10.3f %10.3f\n", c.name, Median(c.rates),
                Median(c.rates) / bare, ratios.front(), ratios.back(), Median(c.p50_ms),
                Median(c.p99_ms));
  }
  server->Shutdown();
  return 0;
}
