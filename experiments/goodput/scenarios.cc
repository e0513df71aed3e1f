#include "experiments/goodput/scenarios.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "src/core/random_source.h"

namespace goodput {
namespace {

// Uniform milliseconds in [lo, hi], seeded (the same schedule every time).
class Jitter {
 public:
  explicit Jitter(uint64_t seed) : random_(seed * 7919 + 17) {}
  absl::Duration Between(absl::Duration lo, absl::Duration hi) {
    const double span = absl::ToDoubleMilliseconds(hi - lo);
    return lo + absl::Milliseconds(static_cast<int64_t>(random_.NextUniform() * (span + 1)));
  }

 private:
  resilience::SplitMixRandom random_;
};

// Appends `p` lasting `d` at the schedule's end, clipped to `length`; false
// once the schedule is full.
bool Append(std::vector<Period>& schedule, Period p, absl::Duration d, absl::Duration length) {
  const absl::Duration start = schedule.empty() ? absl::ZeroDuration() : schedule.back().end;
  if (start >= length) return false;
  p.start = start;
  p.end = std::min(length, start + d);
  schedule.push_back(p);
  return p.end < length;
}

Period Healthy() { return Period{}; }
Period Down() {
  Period p;
  p.kind = Period::kDown;
  return p;
}
Period Errors(double rate) {
  Period p;
  p.kind = Period::kErrors;
  p.error_rate = rate;
  return p;
}

// Healthy for [h_lo, h_hi], then `failing` (which appends its own periods),
// alternating until `length`.
std::vector<Period> Cycle(absl::Duration length, uint64_t seed, absl::Duration h_lo,
                          absl::Duration h_hi,
                          const std::function<bool(std::vector<Period>&, Jitter&)>& failing) {
  Jitter jitter(seed);
  std::vector<Period> schedule;
  while (Append(schedule, Healthy(), jitter.Between(h_lo, h_hi), length) &&
         failing(schedule, jitter)) {
  }
  return schedule;
}

}  // namespace

std::vector<std::string> FamilyNames() {
  return {"outage", "mixed", "brownout", "flapping", "ramp", "blip", "long", "slow"};
}

absl::StatusOr<std::vector<Period>> FamilySchedule(const std::string& family,
                                                   absl::Duration length, uint64_t seed) {
  using absl::Milliseconds;
  using absl::Seconds;
  if (family == "outage" || family == "slow") return OutageSchedule(length, seed);
  if (family == "mixed") return MixedSchedule(length, seed);
  auto one = [length](Period p, absl::Duration lo, absl::Duration hi) {
    return [=](std::vector<Period>& s, Jitter& j) { return Append(s, p, j.Between(lo, hi), length); };
  };
  if (family == "brownout") {
    return Cycle(length, seed, Seconds(1), Seconds(50), one(Errors(0.3), Seconds(1), Seconds(20)));
  }
  if (family == "flapping") {
    return Cycle(length, seed, Seconds(1), Seconds(5), one(Down(), Seconds(1), Seconds(5)));
  }
  if (family == "blip") {
    return Cycle(length, seed, Seconds(5), Seconds(15),
                 one(Down(), Milliseconds(150), Milliseconds(250)));
  }
  if (family == "long") {
    return Cycle(length, seed, Seconds(20), Seconds(60), one(Down(), Seconds(110), Seconds(130)));
  }
  if (family == "ramp") {
    return Cycle(length, seed, Seconds(10), Seconds(40), [length](std::vector<Period>& s, Jitter& j) {
      for (double rate : {0.2, 0.4, 0.6, 0.8, 1.0, 0.8, 0.6, 0.4, 0.2}) {
        const Period p = rate >= 1.0 ? Down() : Errors(rate);
        if (!Append(s, p, j.Between(Milliseconds(500), Milliseconds(1500)), length)) return false;
      }
      return true;
    });
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown scenario family \"", family, "\""));
}

absl::StatusOr<Scenario> MakeScenario(const std::string& family, absl::Duration length,
                                      int calls_per_second, uint64_t seed) {
  if (calls_per_second < 1 || calls_per_second > 1000 || 1000 % calls_per_second != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "calls per second: must divide 1000 (1, 2, ..., 100, ..., 1000), got ", calls_per_second));
  }
  absl::StatusOr<std::vector<Period>> schedule = FamilySchedule(family, length, seed);
  if (!schedule.ok()) return schedule.status();
  Scenario s;
  s.schedule = *std::move(schedule);
  s.length = length;
  s.calls_per_second = calls_per_second;
  if (family == "slow") s.failure_latency = absl::Seconds(1);
  return s;
}

}  // namespace goodput
