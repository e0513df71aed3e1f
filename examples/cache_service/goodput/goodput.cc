#include "examples/cache_service/goodput/goodput.h"

#include <algorithm>

#include "src/breaker/random_source.h"
#include "src/breaker/simulated_clock.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/policy/policy_set.h"
#include "shipped_policies.h"

namespace goodput {
namespace {

using resilience::Outcome;

// A uniform draw in [0, 1) that depends only on (seed, index).
double Draw(uint64_t seed, uint64_t index) {
  resilience::SplitMixRandom r(seed * 0x9E3779B97F4A7C15ULL + index);
  return r.NextUniform();
}

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

std::vector<Policy> StandardPolicies() {
  using resilience::SreBreaker;
  using resilience::ThreeStateBreaker;
  std::vector<Policy> policies;
  policies.push_back({"none", [](resilience::Clock&) { return nullptr; }});
  policies.push_back({"sre-go-zero", [](resilience::Clock& clock) {
                        return std::unique_ptr<resilience::Breaker>(
                            *SreBreaker::Create(SreBreaker::Options(), clock));
                      }});
  policies.push_back({"sre-book", [](resilience::Clock& clock) {
                        SreBreaker::Options o;
                        o.k = 2;
                        o.protection = 0;
                        o.force_pass_interval = absl::ZeroDuration();
                        o.recovery_acceleration = false;
                        return std::unique_ptr<resilience::Breaker>(*SreBreaker::Create(o, clock));
                      }});
  policies.push_back({"three-state-hystrix", [](resilience::Clock& clock) {
                        ThreeStateBreaker::Options o;  // 10 s / 10, 20 calls, 50 %
                        o.open_duration = absl::Seconds(5);
                        o.open_duration_multiplier = 1;
                        o.max_open_duration = absl::Seconds(5);
                        o.probe_interval = absl::Milliseconds(200);
                        return std::unique_ptr<resilience::Breaker>(
                            *ThreeStateBreaker::Create(o, clock));
                      }});
  // What examples/cache_service/policies.json ships for Store: a three-state
  // breaker that trips on 10 consecutive failures (an outage is caught in
  // 10 ms at 1 call/ms) or on an 80% failure rate over 10 s (not on the
  // partial failures where most calls still succeed), with a short open
  // period (100 ms, doubling to at most 400 ms) and a probe every 20 ms.
  policies.push_back({"recommended", [](resilience::Clock& clock) {
                        static const resilience::PolicySet* const shipped =
                            new resilience::PolicySet(
                                *resilience::PolicySet::FromJsonString(
                                    cache_service::kShippedPolicies));
                        const resilience::MethodPolicy* store =
                            shipped->Find("/cache.v1.CacheService/Store").policy;
                        return std::unique_ptr<resilience::Breaker>(
                            *ThreeStateBreaker::Create(store->breaker.three_state, clock));
                      }});
  return policies;
}

Metrics RunSimulated(const std::vector<Period>& schedule, absl::Duration length,
                     const Policy& policy, uint64_t seed) {
  resilience::SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  std::unique_ptr<resilience::Breaker> breaker = policy.make(clock);
  Metrics m;
  const int64_t calls = absl::ToInt64Milliseconds(length);
  const int seconds = static_cast<int>((calls + 999) / 1000);
  m.successes_per_second.assign(seconds, 0);
  m.offered_per_second.assign(seconds, 0);
  size_t period = 0;
  // Calls that reached an overloaded backend in the current second, and what
  // the oracle would have sent there.
  int reached_this_second = 0, oracle_this_second = 0;
  int64_t current_second = -1;
  // Recovery: the end of the last failing period, until a success.
  absl::Duration waiting_since = absl::InfiniteDuration();
  absl::Duration recovery_total;
  int recoveries = 0;
  for (int64_t i = 0; i < calls; ++i) {
    const absl::Duration t = absl::Milliseconds(i);
    clock.SetTime(t0 + t);
    while (period + 1 < schedule.size() && t >= schedule[period].end) {
      if (schedule[period].kind != Period::kHealthy) waiting_since = schedule[period].end;
      ++period;
    }
    const Period& p = schedule[period];
    const int64_t second = i / 1000;
    if (second != current_second) {
      current_second = second;
      reached_this_second = oracle_this_second = 0;
    }
    ++m.offered;
    ++m.offered_per_second[second];
    const double draw = Draw(seed, static_cast<uint64_t>(i));
    // The oracle sends only what can succeed.
    switch (p.kind) {
      case Period::kHealthy: ++m.oracle_succeeded; break;
      case Period::kDown: break;
      case Period::kOverloaded:
        if (oracle_this_second < p.capacity_per_second) {
          ++oracle_this_second;
          ++m.oracle_succeeded;
        }
        break;
      case Period::kErrors:
        if (draw >= p.error_rate) ++m.oracle_succeeded;
        break;
    }
    resilience::Admission admission;
    if (breaker != nullptr) {
      admission = breaker->Allow();
      if (!admission.admitted()) {
        ++m.rejected_locally;
        if (p.kind == Period::kHealthy) ++m.rejected_while_healthy;
        continue;
      }
    }
    bool ok = false;
    switch (p.kind) {
      case Period::kHealthy: ok = true; break;
      case Period::kDown: ok = false; break;
      case Period::kOverloaded: ok = reached_this_second++ < p.capacity_per_second; break;
      case Period::kErrors: ok = draw >= p.error_rate; break;
    }
    if (p.kind != Period::kHealthy) ++m.reached_failing_backend;
    if (ok) {
      ++m.succeeded;
      ++m.successes_per_second[second];
      if (waiting_since != absl::InfiniteDuration() && t >= waiting_since) {
        recovery_total += t - waiting_since;
        ++recoveries;
        waiting_since = absl::InfiniteDuration();
      }
    } else {
      ++m.failed;
    }
    if (breaker != nullptr) {
      admission.Record(ok ? Outcome::kSuccess : Outcome::kFailure, absl::Microseconds(500));
    }
  }
  m.goodput_ratio = m.oracle_succeeded > 0 ? static_cast<double>(m.succeeded) / m.oracle_succeeded : 0;
  m.recovery_seconds = recoveries > 0 ? absl::ToDoubleSeconds(recovery_total) / recoveries : 0;
  return m;
}

}  // namespace goodput
