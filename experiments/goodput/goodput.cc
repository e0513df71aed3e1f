#include "experiments/goodput/goodput.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>

#include "absl/strings/str_cat.h"
#include "experiments/goodput/run_recorder.h"
#include "experiments/goodput/scheduled_backend.h"
#include "google/protobuf/util/json_util.h"
#include "resilience/v1/policy.pb.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/breaker/recovery_probe.h"
#include "src/breaker/three_state_breaker.h"
#include "grpc_resilience/policy.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"
#include "shipped_policies.h"

namespace goodput {
namespace {

using resilience::Outcome;

// Seeded uniform integers. (absl::BitGen salts its seeds per process, so it
// would not give the same schedule twice.)
class Rng {
 public:
  explicit Rng(uint64_t seed) : random_(seed) {}
  // Uniform in [lo, hi).
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(random_.NextUniform() * static_cast<double>(hi - lo));
  }

 private:
  resilience::SplitMixRandom random_;
};

std::vector<Period> Alternate(absl::Duration length, uint64_t seed,
                              const std::function<Period(Rng&)>& failing) {
  Rng gen(seed);
  std::vector<Period> schedule;
  absl::Duration t;
  bool healthy = true;
  while (t < length) {
    Period p;
    absl::Duration d;
    if (healthy) {
      p.kind = Period::kHealthy;
      d = absl::Milliseconds(gen.Uniform(1000, 50001));
    } else {
      p = failing(gen);
      d = absl::Milliseconds(gen.Uniform(1000, 20001));
    }
    p.start = t;
    p.end = std::min(length, t + d);
    schedule.push_back(p);
    t = p.end;
    healthy = !healthy;
  }
  return schedule;
}

}  // namespace

std::string KindName(Period::Kind kind) {
  switch (kind) {
    case Period::kHealthy: return "healthy";
    case Period::kDown: return "down";
    case Period::kOverloaded: return "overloaded";
    case Period::kErrors: return "errors";
  }
  return "?";
}

const Period& PeriodAt(const std::vector<Period>& schedule, absl::Duration t) {
  auto it = std::upper_bound(schedule.begin(), schedule.end(), t,
                             [](absl::Duration at, const Period& p) { return at < p.end; });
  return it == schedule.end() ? schedule.back() : *it;
}

std::vector<Period> OutageSchedule(absl::Duration length, uint64_t seed) {
  return Alternate(length, seed, [](Rng&) {
    Period p;
    p.kind = Period::kDown;
    return p;
  });
}

std::vector<Period> MixedSchedule(absl::Duration length, uint64_t seed) {
  return Alternate(length, seed, [](Rng& gen) {
    Period p;
    switch (gen.Uniform(0, 4)) {
      case 0: p.kind = Period::kDown; break;
      case 1: p.kind = Period::kOverloaded; p.capacity_per_second = 300; break;
      case 2: p.kind = Period::kErrors; p.error_rate = 0.2; break;
      default: p.kind = Period::kErrors; p.error_rate = 0.6; break;
    }
    return p;
  });
}

namespace {

// The "breaker" object the shipped policies.json gives `method`, re-printed
// as JSON by protobuf. The file is built in, so a failure here is a bug of
// the build: it stops the program rather than measure no breaker in its place.
std::string ShippedBreakerJson(const std::string& method) {
  resilience::v1::PolicyFile file;
  google::protobuf::util::JsonParseOptions options;
  if (const auto s =
          google::protobuf::util::JsonStringToMessage(cache_service::kShippedPolicies, &file,
                                                      options);
      !s.ok()) {
    std::fprintf(stderr, "goodput: the built-in policies.json does not parse: %s\n",
                 s.ToString().c_str());
    std::abort();
  }
  for (const resilience::v1::MethodConfig& config : file.method_config()) {
    for (const resilience::v1::MethodName& name : config.name()) {
      if (name.method() != method || !config.has_breaker()) continue;
      std::string json;
      if (google::protobuf::util::MessageToJsonString(config.breaker(), &json).ok()) return json;
    }
  }
  std::fprintf(stderr, "goodput: the built-in policies.json has no breaker for %s\n",
               method.c_str());
  std::abort();
}

}  // namespace

std::vector<Policy> StandardPolicies() {
  return {
      {"none", ""},
      // Every field at go-zero's value (seed 000): it counts its own drops
      // as requests and lets a call through after 1 s without one.
      {"sre-go-zero",
       R"({"sre": {"k": 1.5, "protection": 5, "window": "10s", "buckets": 40,
                   "countLocalRejections": true, "forcePassInterval": "1s",
                   "recoveryAcceleration": true}})"},
      // The SRE breaker's own defaults: go-zero's, except that local drops
      // are not counted (it recovers best in docs/breaker-quality.md).
      {"sre-default", R"({"sre": {}})"},
      {"sre-book",
       R"({"sre": {"k": 2, "protection": 0, "forcePassInterval": "0s", "countLocalRejections": true,
                   "recoveryAcceleration": false}})"},
      {"three-state-hystrix",
       R"({"threeState": {"window": "10s", "buckets": 10, "minRequests": 20,
                          "failureRateThreshold": 0.5, "openDuration": "5s",
                          "openDurationMultiplier": 1, "maxOpenDuration": "5s",
                          "probeInterval": "0.2s"}})"},
      // What examples/cache_service/policies.json ships for Store: a
      // three-state breaker that trips on 10 consecutive failures (an outage
      // is caught in 10 ms at 1 call/ms) or on an 80% failure rate over 10 s
      // (not on partial failures where most calls still succeed), with a
      // short open period (200 ms, doubling to at most 480 ms), and a probe
      // that holds the others back for at most 400 ms (probeOverdue)
      // (docs/breaker-quality.md explains each figure).
      {"recommended", ShippedBreakerJson("Store")},
  };
}

std::string PolicyFileFor(const Policy& policy) {
  if (policy.breaker_json.empty()) return R"({"methodConfig": []})";
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", )",
                      R"("method": "Get"}], "breaker": )", policy.breaker_json, "}]}");
}

absl::Status CheckPolicy(const Policy& policy) {
  absl::StatusOr<resilience::PolicySet> set =
      resilience::PolicySet::FromJsonString(PolicyFileFor(policy));
  if (!set.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.key, ": ", set.status().message()));
  }
  return absl::OkStatus();
}

namespace {

// The breaker settings of `policy` as the loader reads them (kNone for none).
resilience::BreakerSettings SettingsOf(const Policy& policy) {
  absl::StatusOr<resilience::PolicyTable> set =
      resilience::PolicyTable::FromJsonString(PolicyFileFor(policy));
  if (!set.ok()) {
    std::fprintf(stderr, "goodput: policy %s: %s\n", policy.key.c_str(),
                 std::string(set.status().message()).c_str());
    std::abort();
  }
  const resilience::MethodPolicy* p = set->Find(kMethod).policy;
  return p == nullptr ? resilience::BreakerSettings() : p->breaker;
}

}  // namespace

std::unique_ptr<resilience::Breaker> MakeBreaker(const Policy& policy, resilience::Clock& clock,
                                                 uint64_t seed) {
  return resilience::CreateBreaker(SettingsOf(policy), clock, seed);
}

Policy WithRecoveryProbe(const Policy& policy, absl::Duration interval) {
  const size_t end = policy.breaker_json.rfind('}');
  if (end == std::string::npos) return policy;
  Policy probed = policy;
  probed.key = policy.key + "+probes";
  probed.breaker_json =
      absl::StrCat(policy.breaker_json.substr(0, end), R"(, "recoveryProbe": {"interval": ")",
                   absl::ToDoubleSeconds(interval), R"(s"}})");
  return probed;
}

Metrics RunScenario(const Scenario& scenario, const Policy& policy, uint64_t seed) {
  resilience::SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  const resilience::BreakerSettings settings = SettingsOf(policy);
  std::unique_ptr<resilience::Breaker> breaker = resilience::CreateBreaker(settings, clock, seed);
  ScheduledBackend backend(scenario.schedule, seed);
  RunRecorder recorder(scenario.schedule, scenario.length, seed);
  // breaker.recoveryProbe: health probes on the simulated clock. Assumption:
  // a probe answers SERVING iff the backend is not down then (a health
  // service reports the server, not the method: errors and overload are
  // invisible to it, down is NOT_SERVING or no answer). A probe takes no
  // simulated time, as calls do; probes are counted apart from calls.
  std::unique_ptr<resilience::RecoveryProbe> prober;
  if (settings.recovery_probe.has_value()) {
    prober = std::make_unique<resilience::RecoveryProbe>(
        *settings.recovery_probe, static_cast<resilience::ThreeStateBreaker&>(*breaker), clock);
  }
  // Probes due up to `t`, each at its own time.
  auto probe_until = [&](absl::Time t) {
    if (prober == nullptr) return;
    t = std::min(t, t0 + scenario.length);
    for (absl::Duration wait = prober->TimeUntilDue(); clock.Now() + wait <= t;
         wait = prober->TimeUntilDue()) {
      clock.SetTime(clock.Now() + wait);
      if (!prober->StartIfDue()) break;
      const int64_t at_ms = absl::ToInt64Milliseconds(clock.Now() - t0);
      const bool up = backend.PeriodAt(at_ms).kind != Period::kDown;
      prober->OnAnswer(up ? resilience::RecoveryProbe::Answer::kServing
                          : resilience::RecoveryProbe::Answer::kNotServing);
    }
  };
  const int64_t spacing_ms = 1000 / scenario.calls_per_second;
  const int64_t length_ms = absl::ToInt64Milliseconds(scenario.length);
  // Failures reported late, in the order they end (the latency is the same
  // for all of them, so in the order they started).
  struct Late {
    absl::Time end;
    resilience::Admission admission;
  };
  std::deque<Late> late;
  auto deliver_until = [&](absl::Time t) {
    while (!late.empty() && late.front().end <= t) {
      probe_until(late.front().end);
      clock.SetTime(late.front().end);
      late.front().admission.Record(Outcome::kFailure, scenario.failure_latency);
      if (prober != nullptr) prober->OnCallFailed();
      late.pop_front();
    }
    probe_until(t);
  };
  for (int64_t tick = 0; tick < length_ms; tick += spacing_ms) {
    const absl::Time now = t0 + absl::Milliseconds(tick);
    deliver_until(now);
    clock.SetTime(now);
    resilience::Admission admission;
    if (breaker != nullptr) {
      admission = breaker->Allow();
      if (!admission.admitted()) {
        recorder.RejectedLocally(tick);
        continue;
      }
    }
    const bool ok = backend.Serve(tick) == absl::StatusCode::kOk;
    recorder.Reached(tick, ok);
    if (breaker == nullptr) continue;
    if (!ok && scenario.failure_latency > absl::ZeroDuration()) {
      late.push_back(Late{now + scenario.failure_latency, std::move(admission)});
      continue;
    }
    // Calls take no simulated time (as in the gRPC mode, whose clock stands
    // still during a call).
    admission.Record(ok ? Outcome::kSuccess : Outcome::kFailure, absl::ZeroDuration());
    if (!ok && prober != nullptr) prober->OnCallFailed();
  }
  deliver_until(absl::InfiniteFuture());
  Metrics metrics = recorder.Finish();
  if (prober != nullptr) metrics.probes = prober->stats().probes;
  return metrics;
}

Metrics RunSimulated(const std::vector<Period>& schedule, absl::Duration length,
                     const Policy& policy, uint64_t seed) {
  Scenario scenario;
  scenario.schedule = schedule;
  scenario.length = length;
  return RunScenario(scenario, policy, seed);
}

void Metrics::SummarizeRecoveries() {
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  auto max = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  first_success_seconds = mean(first_success_per_outage);
  first_success_max_seconds = max(first_success_per_outage);
  recovery99_seconds = mean(recovery99_per_outage);
  recovery99_max_seconds = max(recovery99_per_outage);
}

void Metrics::Merge(const Metrics& o) {
  offered += o.offered;
  probes += o.probes;
  succeeded += o.succeeded;
  failed += o.failed;
  rejected_locally += o.rejected_locally;
  reached_failing_backend += o.reached_failing_backend;
  rejected_while_healthy += o.rejected_while_healthy;
  oracle_succeeded += o.oracle_succeeded;
  answered_stale += o.answered_stale;
  goodput_ratio = oracle_succeeded > 0 ? static_cast<double>(succeeded) / oracle_succeeded : 0;
  first_success_per_outage.insert(first_success_per_outage.end(),
                                  o.first_success_per_outage.begin(),
                                  o.first_success_per_outage.end());
  recovery99_per_outage.insert(recovery99_per_outage.end(), o.recovery99_per_outage.begin(),
                               o.recovery99_per_outage.end());
  SummarizeRecoveries();
}

void SetWasteRatios(std::vector<Metrics>& results, size_t none) {
  const double base = static_cast<double>(results[none].reached_failing_backend);
  for (Metrics& m : results) m.waste_ratio = base > 0 ? m.reached_failing_backend / base : 0;
}

}  // namespace goodput
