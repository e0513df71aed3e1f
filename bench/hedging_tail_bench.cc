// Tail latency with and without hedging (hedgingPolicy), closed-loop
// callers against a cache server whose Get has a long tail: a seeded 5 % of
// calls are held 80 ms by the server's fault injection, the rest answer at
// once. Configurations, each on a channel of its own, measured in the same
// run: no hedging, a fixed hedgingDelay, and the adaptive delay (p95 of the
// method's observed latencies, floor 1 ms). Then the same under overload:
// every call takes 20 ms, so every call outlives a 10 ms hedgingDelay and
// only the retry budget (10 tokens, ratio 0.1) holds the hedges back.
// Prints p50, p99, p99.9 and attempts per call of each, with the ratio of
// each p99 to the unhedged p99 of the same run (bench/run_hedging_tail_bench.sh).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/load_generator.h"
#include "examples/common/command_line.h"
#include "grpcpp/create_channel.h"
#include "grpc_resilience/resilient_channel.h"

ABSL_FLAG(double, seconds, 4, "Length of each configuration's run.");
ABSL_FLAG(int, concurrency, 8, "Closed-loop callers.");

namespace {

constexpr char kUsage[] =
    "Tail latency of unary Get with no hedging, a fixed hedgingDelay and the adaptive\n"
    "delay, against a backend with a long tail, then under overload.\n\n"
    "  hedging_tail_bench [--seconds=4] [--concurrency=8]";

constexpr char kGet[] = "/cache.v1.CacheService/Get";

struct Config {
  const char* name;
  const char* hedging;  // the hedgingPolicy's fields; null: none
};

// The client's policy for Get: `hedging` (or none) and the default budget
// of its own (retryBudget: each timer hedge spends a token).
std::string ClientPolicy(const char* hedging) {
  if (hedging == nullptr) return "{}";
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
      "hedgingPolicy": {)",
                      hedging, R"(}, "retryBudget": {"maxTokens": 10, "tokenRatio": 0.1}}]})");
}

// Runs every configuration against a server whose Get has `fault`.
bool RunScenario(const char* title, const std::string& fault, const std::vector<Config>& configs) {
  cache_service::CacheServer::Options options;
  absl::StatusOr<resilience::PolicySet> server_policies = resilience::PolicySet::FromJsonString(
      absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
          "faultInjection": {)",
                   fault, "}}]}"));
  if (!server_policies.ok()) {
    std::fprintf(stderr, "server policy: %s\n", server_policies.status().ToString().c_str());
    return false;
  }
  options.policies = *std::move(server_policies);
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return false;
  }
  const std::string target = (*server)->address();
  {
    // Every key the load reads exists: each Get answers OK.
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    auto stub = cache::v1::CacheService::NewStub(channel);
    for (int k = 0; k < 100; ++k) {
      grpc::ClientContext context;
      cache::v1::StoreReq request;
      request.set_key(absl::StrCat("key-", k));
      request.set_value(std::string(100, 'v'));
      cache::v1::StoreResp response;
      if (!stub->Store(&context, request, &response).ok()) {
        std::fprintf(stderr, "preloading key-%d failed\n", k);
        return false;
      }
    }
  }
  cache_service::LoadOptions load;
  load.calls = 0;
  load.duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  load.concurrency = absl::GetFlag(FLAGS_concurrency);
  load.get_fraction = 1.0;
  load.key_space = 100;
  load.call_timeout = absl::Seconds(10);
  std::printf("\n%s\n", title);
  std::printf("%-34s %8s %9s %9s %9s %12s %14s\n", "configuration", "calls", "p50 ms", "p99 ms",
              "p99.9 ms", "p99 / none", "attempts/call");
  double none_p99 = 0;
  for (const Config& c : configs) {
    absl::StatusOr<resilience::PolicySet> policy =
        resilience::PolicySet::FromJsonString(ClientPolicy(c.hedging));
    if (!policy.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name, policy.status().ToString().c_str());
      return false;
    }
    resilience::ResilientChannelOptions channel_options;
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    channel_options.args = args;
    resilience::ResilientChannel made = resilience::CreateResilientChannel(
        target, grpc::InsecureChannelCredentials(), *policy, std::move(channel_options));
    auto stub = cache::v1::CacheService::NewStub(made.channel);
    cache_service::LoadReport r = cache_service::RunLoad(*stub, load);
    const resilience::ClientMethodStats stats = made.resilience->Stats(kGet);
    const double p99 = absl::ToDoubleMilliseconds(r.Percentile(0.99));
    if (c.hedging == nullptr) none_p99 = p99;
    // Without a policy the chain does not count attempts: one per call.
    const double attempts_per_call =
        c.hedging == nullptr ? 1.0 : static_cast<double>(stats.attempts) / stats.calls;
    const int64_t ok = r.count(grpc::StatusCode::OK);
    std::printf("%-34s %8lld %9.3f %9.3f %9.3f %12.3f %14.4f%s\n", c.name,
                static_cast<long long>(r.calls), absl::ToDoubleMilliseconds(r.Percentile(0.5)), p99,
                absl::ToDoubleMilliseconds(r.Percentile(0.999)),
                none_p99 > 0 ? p99 / none_p99 : 0.0, attempts_per_call,
                ok == r.calls ? "" : absl::StrCat("  (", r.calls - ok, " not OK)").c_str());
  }
  (*server)->Shutdown(absl::ZeroDuration());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (const double seconds = absl::GetFlag(FLAGS_seconds); !(seconds > 0 && seconds <= 600)) {
    return example_cli::UsageError(absl::StrCat("--seconds: must be in (0, 600], got ", seconds));
  }
  if (const int concurrency = absl::GetFlag(FLAGS_concurrency);
      concurrency < 1 || concurrency > 256) {
    return example_cli::UsageError(
        absl::StrCat("--concurrency: must be in [1, 256], got ", concurrency));
  }
  const std::vector<Config> configs = {
      {"none", nullptr},
      {"fixed hedgingDelay 10ms", R"("maxAttempts": 2, "hedgingDelay": "0.01s")"},
      {"adaptive p95, floor 1ms", R"("maxAttempts": 2, "hedgingDelay": "0.01s",
          "adaptiveDelay": {"percentile": 95, "floor": "0.001s"})"},
  };
  std::printf("unary Get over loopback, %d closed-loop callers, %.0f s per configuration\n",
              absl::GetFlag(FLAGS_concurrency), absl::GetFlag(FLAGS_seconds));
  if (!RunScenario("long tail: 5% of calls held 80 ms, the rest at once",
                   R"("delay": "0.08s", "delayFraction": 0.05, "seed": 7)", configs)) {
    return 1;
  }
  if (!RunScenario("overload: every call takes 20 ms (budget: 10 tokens, ratio 0.1)",
                   R"("delay": "0.02s", "delayFraction": 1.0, "seed": 7)", configs)) {
    return 1;
  }
  return 0;
}
