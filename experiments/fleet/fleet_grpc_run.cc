#include "experiments/fleet/fleet_grpc_run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"

namespace fleet {
namespace {

// An arrival sent later than this after its time counts as late.
constexpr absl::Duration kLate = absl::Milliseconds(20);

// The client file with round_robin over the servers (the simulator's clients
// send each attempt to their next server).
std::string WithRoundRobin(const std::string& client_json) {
  const size_t brace = client_json.find('{');
  return absl::StrCat(client_json.substr(0, brace + 1),
                      R"("loadBalancingConfig": [{"round_robin": {}}], )",
                      client_json.substr(brace + 1));
}

// Per bin, what the clients saw; written from gRPC's callback threads.
struct Bins {
  explicit Bins(size_t n) : offered(n), succeeded(n) {}
  std::vector<std::atomic<int64_t>> offered;
  std::vector<std::atomic<int64_t>> succeeded;
  // Latencies (ms) of the successes before the trigger.
  resilience::Mutex mu;
  std::vector<double> baseline_ms ABSL_GUARDED_BY(mu);
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// One call in flight; deletes itself when answered.
struct Call {
  grpc::ClientContext context;
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  absl::Time arrived;
  size_t bin = 0;
  bool baseline = false;  // arrived 2 s into the run to 2.5 s before the trigger
};

// The channels' counters so far: attempts sent to a server, and attempts
// their breakers refused (not sent).
struct Sent {
  int64_t attempts = 0;
  int64_t refused = 0;
};

Sent SentAttempts(const std::vector<resilience::ResilientChannel>& channels) {
  Sent sent;
  for (const resilience::ResilientChannel& c : channels) {
    const resilience::ClientMethodStats s = c.resilience->Stats(kMethod);
    sent.attempts += s.attempts - s.rejected_by_breaker;
    sent.refused += s.rejected_by_breaker;
  }
  return sent;
}

struct Backends {
  std::vector<std::unique_ptr<cache_service::BoundedCapacityService>> services;
  std::vector<cache_service::GuardedBackend> servers;
  std::vector<std::string> addresses;
};

absl::StatusOr<Backends> StartServers(const Config& c, const FleetPolicy& policy) {
  // No throttle: an entry without one (the interceptors then count only).
  const std::string server_json =
      policy.server_json.empty()
          ? R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}]}]})"
          : policy.server_json;
  Backends b;
  for (int i = 0; i < c.servers; ++i) {
    absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(server_json);
    if (!policies.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(policy.name, ": server policy: ", policies.status().message()));
    }
    b.services.push_back(std::make_unique<cache_service::BoundedCapacityService>(
        c.workers, c.workers, c.service_time, c.seed * 1000 + static_cast<uint64_t>(i)));
    absl::StatusOr<cache_service::GuardedBackend> server =
        cache_service::ServeGuarded(*b.services.back(), *std::move(policies));
    if (!server.ok()) return server.status();
    b.addresses.push_back(absl::StrCat("127.0.0.1:", server->port));
    b.servers.push_back(*std::move(server));
  }
  return b;
}

void StopServers(Backends& b) {
  for (auto& s : b.services) s->Stop();
  for (auto& s : b.servers) {
    s.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
}

}  // namespace

absl::StatusOr<GrpcRun> RunOverGrpc(const Config& c, const FleetPolicy& policy) {
  if (absl::Status s = Validate(c); !s.ok()) return s;
  if (c.trigger.kind != TriggerKind::kNone && c.trigger.kind != TriggerKind::kCapacityHalf) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fleet over gRPC: trigger ", TriggerName(c.trigger.kind),
        " is not supported (none and capacity_half are)"));
  }
  if (policy.client_json.empty() || policy.budget_stripped) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fleet over gRPC: policy ", policy.name,
        " has no policy file the library would load as it is (changed after loading)"));
  }
  absl::StatusOr<Backends> backends = StartServers(c, policy);
  if (!backends.ok()) return backends.status();
  const std::string target = absl::StrCat("ipv4:", absl::StrJoin(backends->addresses, ","));

  std::vector<resilience::ResilientChannel> channels;
  std::vector<std::unique_ptr<cache::v1::CacheService::Stub>> stubs;
  for (int i = 0; i < c.clients; ++i) {
    absl::StatusOr<resilience::PolicySet> policies =
        resilience::PolicySet::FromJsonString(WithRoundRobin(policy.client_json));
    if (!policies.ok()) {
      StopServers(*backends);
      return absl::InvalidArgumentError(
          absl::StrCat(policy.name, ": client policy: ", policies.status().message()));
    }
    resilience::ResilientChannelOptions options;
    options.resilience.seed = c.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i) + 1;
    options.resilience.name = absl::StrCat("client-", i);
    // A channel of its own (own connections, own round robin), as a process.
    options.args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channels.push_back(resilience::CreateResilientChannel(
        target, grpc::InsecureChannelCredentials(), *policies, std::move(options)));
    stubs.push_back(cache::v1::CacheService::NewStub(channels.back().channel));
  }
  // Every channel connected to every server before the run: one call per
  // server, not measured (they succeed: the breakers and budgets stay as new).
  for (auto& stub : stubs) {
    for (int s = 0; s < c.servers; ++s) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
      context.set_wait_for_ready(true);
      cache::v1::GetReq request;
      cache::v1::GetResp response;
      request.set_key("warm-up");
      stub->Get(&context, request, &response);
    }
  }

  const int64_t bin_ns = absl::ToInt64Nanoseconds(c.bin);
  const size_t n_bins = static_cast<size_t>(
      (absl::ToInt64Nanoseconds(RunLength(c)) + bin_ns - 1) / bin_ns);
  Bins bins(n_bins);
  std::vector<Sent> attempts(n_bins);
  std::atomic<int64_t> outstanding{0};
  const Sent base_attempts = SentAttempts(channels);
  const absl::Time start = absl::Now() + absl::Milliseconds(50);
  const absl::Time end = start + RunLength(c);

  // At every bin boundary: the attempts sent in the bin, and the trigger.
  std::thread sampler([&] {
    Sent before = base_attempts;
    bool slowed = false;
    for (size_t i = 0; i < n_bins; ++i) {
      absl::SleepFor(start + c.bin * static_cast<int64_t>(i + 1) - absl::Now());
      const absl::Duration into = absl::Now() - start;
      const bool on = c.trigger.kind == TriggerKind::kCapacityHalf && into >= c.warmup &&
                      into < c.warmup + c.trigger.length;
      if (on != slowed) {
        for (auto& s : backends->services) s->SetSlowdown(on ? 2.0 : 1.0);
        slowed = on;
      }
      const Sent now = SentAttempts(channels);
      attempts[i] = Sent{now.attempts - before.attempts, now.refused - before.refused};
      before = now;
    }
  });

  GrpcRun run;
  const double rate = c.load * Capacity(c);
  const int64_t timeout_ns = absl::ToInt64Nanoseconds(policy.timeout);
  resilience::SplitMixRandom random(c.seed);
  absl::Time next = start;
  while (true) {
    next += absl::Seconds(-std::log(1.0 - random.NextUniform()) / rate);
    if (next >= end) break;
    if (const absl::Duration wait = next - absl::Now(); wait > absl::ZeroDuration()) {
      absl::SleepFor(wait);
    }
    const absl::Duration late = absl::Now() - next;
    if (late > kLate) ++run.late_arrivals;
    run.max_lateness_ms = std::max(run.max_lateness_ms, absl::ToDoubleMilliseconds(late));
    const size_t client = std::min<size_t>(
        static_cast<size_t>(random.NextUniform() * c.clients), static_cast<size_t>(c.clients - 1));
    auto* call = new Call;
    call->arrived = next;
    call->bin = std::min(n_bins - 1, static_cast<size_t>((next - start) / c.bin));
    call->baseline = next - start >= absl::Seconds(2) && next - start < c.warmup - absl::Seconds(2.5);
    call->request.set_key("k");
    call->context.set_deadline(absl::ToChronoTime(next + policy.timeout));
    bins.offered[call->bin].fetch_add(1);
    outstanding.fetch_add(1);
    stubs[client]->async()->Get(
        &call->context, &call->request, &call->response,
        [call, &bins, &outstanding, timeout_ns](grpc::Status status) {
          const absl::Duration latency = absl::Now() - call->arrived;
          if (status.ok() && absl::ToInt64Nanoseconds(latency) <= timeout_ns) {
            bins.succeeded[call->bin].fetch_add(1);
            if (call->baseline) {
              resilience::MutexLock lock(&bins.mu);
              bins.baseline_ms.push_back(absl::ToDoubleMilliseconds(latency));
            }
          }
          delete call;
          outstanding.fetch_sub(1);
        });
  }
  sampler.join();
  // Every call ends by its timeout; a little slack for the last answers.
  const absl::Time give_up = absl::Now() + policy.timeout + absl::Seconds(5);
  while (outstanding.load() > 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  StopServers(*backends);
  while (outstanding.load() > 0) absl::SleepFor(absl::Milliseconds(5));

  {
    resilience::MutexLock lock(&bins.mu);
    run.baseline_p50_ms = Percentile(bins.baseline_ms, 0.5);
    run.baseline_p99_ms = Percentile(bins.baseline_ms, 0.99);
  }
  RunResult& r = run.result;
  r.policy = policy.name;
  r.config = c;
  r.bins.resize(n_bins);
  for (size_t i = 0; i < n_bins; ++i) {
    r.bins[i].offered = bins.offered[i].load();
    r.bins[i].succeeded = bins.succeeded[i].load();
    r.bins[i].attempts = attempts[i].attempts;
    r.bins[i].refused_locally = attempts[i].refused;
  }
  Summarize(r);
  return run;
}

}  // namespace fleet
