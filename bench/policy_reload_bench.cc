// Live policy updates under load: Get and Store calls at a fixed rate
// (open loop, about 1,000 calls/s by default) against an in-process cache
// server, through a resilient channel, in alternating phases: one with no
// update, one where both the channel and the server take --updates policy
// updates (evenly spread; two policy versions in turn, each changing Get's
// retries, Store's breaker and the server's Store and Dump limits, Get's
// policy identical). Prints per phase the calls, the failed ones and the
// latency percentiles, and the ratio of the p99 with updates to the p99
// without (docs/operations.md, "Reloading policies").
//
//   policy_reload_bench [--seconds=10] [--rate=1000] [--updates=50] [--rounds=2]

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/common/command_line.h"
#include "grpcpp/create_channel.h"
#include "grpc_resilience/resilient_channel.h"

ABSL_FLAG(double, seconds, 10, "Length of each phase.");
ABSL_FLAG(int, rate, 1000, "Calls per second (open loop).");
ABSL_FLAG(int, updates, 50, "Policy updates in a phase with updates (client and server each).");
ABSL_FLAG(int, rounds, 2, "Pairs of phases (without, with updates).");

namespace {

constexpr char kUsage[] =
    "Calls at a fixed rate through a resilient channel to a cache server, with and\n"
    "without live policy updates of both; failed calls and p99 of each phase.\n\n"
    "  policy_reload_bench [--seconds=10] [--rate=1000] [--updates=50] [--rounds=2]";
constexpr int kWorkers = 16;
constexpr int kKeys = 100;

// Version `v` (0 or 1) of the client's policies: Get the same in both.
std::string ClientPolicies(int v) {
  return absl::StrCat(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}], "timeout": "2s",
     "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.2s",
                     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
     "breaker": {"sre": {"k": 1.5}}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Store"}], "timeout": "2s",
     "retryPolicy": {"maxAttempts": )",
                      v == 0 ? 3 : 2, R"(, "initialBackoff": "0.02s", "maxBackoff": "0.2s",
                     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
     "breaker": {"threeState": {"failureRateThreshold": 0.8, "minRequests": 20,
                                "openDuration": ")",
                      v == 0 ? "0.2s" : "0.3s", R"("}}}],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
}

// Version `v` of the server's: Store's and Dump's limits change, Get's not.
std::string ServerPolicies(int v) {
  return absl::StrCat(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 64, "ratePerSecond": 20000, "burst": 2000}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
     "throttle": {"maxConcurrency": )",
                      v == 0 ? 32 : 24, R"(}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Dump"}],
     "throttle": {"maxConcurrency": )",
                      v == 0 ? 8 : 2, R"(}}]})");
}

resilience::PolicySet Load(const std::string& json) {
  absl::StatusOr<resilience::PolicySet> set = resilience::PolicySet::FromJsonString(json);
  if (!set.ok()) {
    std::fprintf(stderr, "policy: %s\n", set.status().ToString().c_str());
    std::exit(1);
  }
  return *set;
}

struct Phase {
  int64_t calls = 0;
  int64_t failed = 0;
  int updates = 0;
  std::vector<absl::Duration> latencies;

  double Percentile(double q) const {
    if (latencies.empty()) return 0;
    const size_t i = std::min(latencies.size() - 1, static_cast<size_t>(q * latencies.size()));
    return absl::ToDoubleMilliseconds(latencies[i]);
  }
};

// One phase: calls at `rate` for `length`; with `updates` > 0, that many
// updates of the channel and of the server, evenly spread.
Phase RunPhase(cache::v1::CacheService::Stub& stub, resilience::ClientResilience& client,
               resilience::ServerResilience& server, int rate, absl::Duration length,
               int updates, int& version) {
  const int64_t total = static_cast<int64_t>(absl::ToDoubleSeconds(length) * rate);
  const absl::Time start = absl::Now() + absl::Milliseconds(50);
  std::atomic<int64_t> next{0};
  std::vector<Phase> per_worker(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      Phase& mine = per_worker[w];
      for (int64_t i = next++; i < total; i = next++) {
        absl::SleepFor(start + absl::Seconds(static_cast<double>(i) / rate) - absl::Now());
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
        const std::string key = absl::StrCat("key-", i % kKeys);
        const absl::Time t0 = absl::Now();
        grpc::Status status;
        if (i % 5 != 0) {
          cache::v1::GetReq request;
          request.set_key(key);
          cache::v1::GetResp response;
          status = stub.Get(&context, request, &response);
        } else {
          cache::v1::StoreReq request;
          request.set_key(key);
          request.set_value(std::string(100, 'v'));
          cache::v1::StoreResp response;
          status = stub.Store(&context, request, &response);
        }
        mine.latencies.push_back(absl::Now() - t0);
        ++mine.calls;
        if (!status.ok()) ++mine.failed;
      }
    });
  }
  Phase phase;
  for (int u = 0; u < updates; ++u) {
    absl::SleepFor(start + length * (u + 0.5) / updates - absl::Now());
    version = 1 - version;
    const bool client_ok = client.Update(Load(ClientPolicies(version))).ok();
    const bool server_ok = server.Update(Load(ServerPolicies(version))).ok();
    if (client_ok && server_ok) ++phase.updates;
  }
  for (std::thread& t : workers) t.join();
  for (Phase& p : per_worker) {
    phase.calls += p.calls;
    phase.failed += p.failed;
    phase.latencies.insert(phase.latencies.end(), p.latencies.begin(), p.latencies.end());
  }
  std::sort(phase.latencies.begin(), phase.latencies.end());
  return phase;
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int rate = absl::GetFlag(FLAGS_rate);
  const int updates = absl::GetFlag(FLAGS_updates);
  const int rounds = absl::GetFlag(FLAGS_rounds);
  if (!(seconds > 0 && seconds <= 600)) {
    return example_cli::UsageError(absl::StrCat("--seconds: must be in (0, 600], got ", seconds));
  }
  if (rate < 1 || rate > 20000) {
    return example_cli::UsageError(absl::StrCat("--rate: must be in [1, 20000], got ", rate));
  }
  if (updates < 1 || updates > 10000) {
    return example_cli::UsageError(absl::StrCat("--updates: must be in [1, 10000], got ", updates));
  }
  if (rounds < 1 || rounds > 20) {
    return example_cli::UsageError(absl::StrCat("--rounds: must be in [1, 20], got ", rounds));
  }
  cache_service::CacheServer::Options options;
  options.policies = Load(ServerPolicies(0));
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      (*server)->address(), grpc::InsecureChannelCredentials(), Load(ClientPolicies(0)));
  auto stub = cache::v1::CacheService::NewStub(channel.channel);
  for (int k = 0; k < kKeys; ++k) {  // every key a Get asks for exists
    grpc::ClientContext context;
    cache::v1::StoreReq request;
    request.set_key(absl::StrCat("key-", k));
    request.set_value(std::string(100, 'v'));
    cache::v1::StoreResp response;
    if (grpc::Status s = stub->Store(&context, request, &response); !s.ok()) {
      std::fprintf(stderr, "storing key-%d: %s\n", k, s.error_message().c_str());
      return 1;
    }
  }
  int version = 0;
  // A warm connection.
  RunPhase(*stub, *channel.resilience, (*server)->resilience(), rate, absl::Seconds(1), 0, version);

  std::printf("%-16s %8s %8s %8s %9s %9s %9s\n", "phase", "calls", "failed", "updates", "p50 ms",
              "p99 ms", "p99.9 ms");
  Phase without, with;
  for (int r = 0; r < rounds; ++r) {
    for (const bool updating : {false, true}) {
      Phase p = RunPhase(*stub, *channel.resilience, (*server)->resilience(), rate,
                         absl::Seconds(seconds), updating ? updates : 0, version);
      std::printf("%-16s %8lld %8lld %8d %9.3f %9.3f %9.3f\n",
                  updating ? "with updates" : "without", static_cast<long long>(p.calls),
                  static_cast<long long>(p.failed), p.updates, p.Percentile(0.5),
                  p.Percentile(0.99), p.Percentile(0.999));
      Phase& all = updating ? with : without;
      all.calls += p.calls;
      all.failed += p.failed;
      all.updates += p.updates;
      all.latencies.insert(all.latencies.end(), p.latencies.begin(), p.latencies.end());
    }
  }
  std::sort(without.latencies.begin(), without.latencies.end());
  std::sort(with.latencies.begin(), with.latencies.end());
  std::printf("\nall phases: without updates %lld calls, %lld failed, p99 %.3f ms; with %d updates "
              "%lld calls, %lld failed, p99 %.3f ms; p99 ratio %.3f\n",
              static_cast<long long>(without.calls), static_cast<long long>(without.failed),
              without.Percentile(0.99), with.updates, static_cast<long long>(with.calls),
              static_cast<long long>(with.failed), with.Percentile(0.99),
              without.Percentile(0.99) > 0 ? with.Percentile(0.99) / without.Percentile(0.99) : 0);
  std::printf("client generation %lld, server generation %lld\n",
              static_cast<long long>(channel.resilience->policy_generation()),
              static_cast<long long>((*server)->resilience().policy_generation()));
  (*server)->Shutdown(absl::ZeroDuration());
  return with.failed == 0 && without.failed == 0 ? 0 : 1;
}
