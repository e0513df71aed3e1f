#include "experiments/goodput/probe_schedule_bound.h"

#include <algorithm>
#include <limits>

#include "experiments/goodput/run_recorder.h"
#include "experiments/goodput/scheduled_backend.h"

namespace goodput {

int64_t OutageSample::down_calls() const {
  int64_t n = 0;
  for (const OutageCalls& o : outages) n += o.down;
  return n;
}

void OutageSample::Add(const Scenario& scenario) {
  const int64_t spacing = 1000 / scenario.calls_per_second;
  // Calls at ticks 0, spacing, ... below the run's length.
  auto calls_in = [&](const Period& p) {
    const int64_t from = absl::ToInt64Milliseconds(p.start);
    const int64_t to = absl::ToInt64Milliseconds(p.end);
    auto first_at_or_after = [&](int64_t t) { return (t + spacing - 1) / spacing; };
    return first_at_or_after(to) - first_at_or_after(from);
  };
  const std::vector<Period>& s = scenario.schedule;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind == Period::kHealthy) {
      healthy_calls += calls_in(s[i]);
      continue;
    }
    OutageCalls o;
    o.down = calls_in(s[i]);
    if (i + 1 < s.size()) o.healthy = calls_in(s[i + 1]);
    if (o.down > 0) outages.push_back(o);
  }
}

ScheduleCost CostOf(const ProbeSchedule& schedule, const OutageSample& sample) {
  ScheduleCost c;
  const int64_t last = schedule.empty() ? 0 : schedule.back();
  for (const OutageCalls& o : sample.outages) {
    // Probes at ages 1 .. down-1 are in the outage.
    auto in_outage = std::lower_bound(schedule.begin(), schedule.end(), o.down);
    c.probes += in_outage - schedule.begin();
    if (o.down > last + 1) {
      // Every call after the last age goes: those in the outage are probes,
      // and the first healthy one is let through.
      c.probes += o.down - std::max<int64_t>(last + 1, 1);
      continue;
    }
    if (in_outage != schedule.end()) c.lost += std::min(*in_outage - o.down, o.healthy);
  }
  return c;
}

BestSchedule OptimalSchedule(const OutageSample& sample, double lambda) {
  int64_t max_age = 0;
  for (const OutageCalls& o : sample.outages) max_age = std::max(max_age, o.down);
  // value[a]: the least probes + lambda * lost over the outages longer than
  // a, given that the probe at age a (the detection call for a = 0) failed;
  // next[a]: the age of the next probe that achieves it.
  std::vector<double> value(max_age + 1, 0);
  std::vector<int64_t> next(max_age + 1, 0);
  std::vector<int64_t> starts(max_age + 2), ends(max_age + 2), at(max_age + 2);
  for (int64_t a = max_age - 1; a >= 0; --a) {
    std::fill(starts.begin(), starts.end(), 0);
    std::fill(ends.begin(), ends.end(), 0);
    std::fill(at.begin(), at.end(), 0);
    int64_t remaining = 0;
    for (const OutageCalls& o : sample.outages) {
      if (o.down <= a) continue;
      ++remaining;
      ++at[o.down];
      if (o.healthy > 0) {
        ++starts[o.down];
        ++ends[std::min(o.down + o.healthy, max_age + 1)];
      }
    }
    // With the next probe at age b: lost = sum over the outages that ended
    // in (a, b] of min(b - down, healthy), kept as b grows; `accruing` are
    // those that lose one more call for each further age.
    double best = std::numeric_limits<double>::infinity();
    int64_t best_b = max_age;
    int64_t lost = 0, accruing = 0;
    for (int64_t b = a + 1; b <= max_age; ++b) {
      lost += accruing;
      accruing += starts[b] - ends[b];
      remaining -= at[b];
      const double cost = lambda * static_cast<double>(lost) + static_cast<double>(remaining) +
                          value[b];
      if (cost < best) {
        best = cost;
        best_b = b;
      }
    }
    value[a] = best;
    next[a] = best_b;
  }
  BestSchedule out;
  for (int64_t a = 0; a < max_age;) {
    a = next[a];
    out.schedule.push_back(a);
  }
  out.cost = CostOf(out.schedule, sample);
  return out;
}

Metrics RunProbeSchedule(const Scenario& scenario, const ProbeSchedule& schedule,
                         uint64_t seed) {
  ScheduledBackend backend(scenario.schedule, seed);
  RunRecorder recorder(scenario.schedule, scenario.length, seed);
  const int64_t spacing = 1000 / scenario.calls_per_second;
  const int64_t length = absl::ToInt64Milliseconds(scenario.length);
  const int64_t last = schedule.empty() ? 0 : schedule.back();
  bool in_outage = false;  // since a failure, until a success
  int64_t age = 0;
  for (int64_t tick = 0; tick < length; tick += spacing) {
    if (in_outage) {
      ++age;
      if (age <= last && !std::binary_search(schedule.begin(), schedule.end(), age)) {
        recorder.RejectedLocally(tick);
        continue;
      }
    }
    const bool ok = backend.Serve(tick) == absl::StatusCode::kOk;
    recorder.Reached(tick, ok);
    if (!ok && !in_outage) age = 0;
    in_outage = !ok;
  }
  return recorder.Finish();
}

Feasibility CheckTargets(const OutageSample& sample, double max_waste, double max_loss,
                         bool count_detection) {
  Feasibility f;
  f.outages = static_cast<int64_t>(sample.outages.size());
  f.down_calls = sample.down_calls();
  f.healthy_calls = sample.healthy_calls;
  f.detection_calls = count_detection ? f.outages : 0;
  const double probe_budget =
      max_waste * static_cast<double>(f.down_calls) - static_cast<double>(f.detection_calls);
  const double lost_budget = max_loss * static_cast<double>(f.healthy_calls);
  f.margin = -std::numeric_limits<double>::infinity();
  // lambda: what one lost call is worth in probes; the certificate holds for
  // any lambda, so trying a grid is enough to find one.
  for (double lambda = 0.25; lambda <= 64; lambda *= 1.05) {
    BestSchedule best = OptimalSchedule(sample, lambda);
    const double left = static_cast<double>(best.cost.probes) +
                        lambda * static_cast<double>(best.cost.lost);
    const double margin =
        (left - (probe_budget + lambda * lost_budget)) / static_cast<double>(f.down_calls);
    if (margin > f.margin) {
      f.margin = margin;
      f.lambda = lambda;
      f.best = std::move(best);
    }
  }
  return f;
}

}  // namespace goodput
