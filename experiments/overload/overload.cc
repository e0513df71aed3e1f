#include "experiments/overload/overload.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/overload/simulated_throttle.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/limits/concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"

namespace overload {
namespace {

using resilience::ConcurrencyLimiter;
using resilience::GradientConcurrencyLimiter;
using resilience::Outcome;

// How often the limit is looked at, for its mean and convergence.
constexpr absl::Duration kTick = absl::Milliseconds(100);
// Calls admitted this long into a phase count as settled.
constexpr absl::Duration kSettle = absl::Seconds(2);

struct Call {
  absl::Duration arrival;  // from the start of the run
  absl::Duration service;
  int phase;
};

// The same arrivals and service times for every policy.
std::vector<Call> MakeCalls(const Config& c, int phases) {
  resilience::SplitMixRandom arrivals(c.seed);
  resilience::SplitMixRandom services(c.seed ^ 0x9e3779b97f4a7c15ULL);
  const double capacity = c.workers / absl::ToDoubleSeconds(c.service_time);
  std::vector<Call> calls;
  for (int p = 0; p < phases; ++p) {
    const double load = c.loads[p / c.capacities.size()];
    const double rate = load * capacity;
    const double start = absl::ToDoubleSeconds(c.phase_length * p);
    const double end = start + absl::ToDoubleSeconds(c.phase_length);
    double t = start;
    while (true) {
      t += -std::log(1.0 - arrivals.NextUniform()) / rate;
      if (t >= end) break;
      calls.push_back(Call{absl::Seconds(t), c.service_time * (0.5 + services.NextUniform()), p});
    }
  }
  return calls;
}

absl::StatusOr<std::unique_ptr<ConcurrencyLimiter>> MakeLimiter(const Policy& policy,
                                                                resilience::Clock& clock) {
  if (policy.throttle_json.empty()) return std::unique_ptr<ConcurrencyLimiter>();
  absl::StatusOr<SimulatedThrottle> throttle = SimulatedThrottle::Create(policy, clock);
  if (!throttle.ok()) return throttle.status();
  return std::move(throttle->limiter);
}

struct PolicyRun {
  std::vector<PhaseResult> phases;
  double total_goodput = 0;
};

// One policy through the whole run.
absl::StatusOr<PolicyRun> RunPolicy(const Config& c, const Policy& policy,
                                    const std::vector<Call>& calls, int phases) {
  resilience::SimulatedClock clock;
  const absl::Time start = clock.Now();
  absl::StatusOr<std::unique_ptr<ConcurrencyLimiter>> made = MakeLimiter(policy, clock);
  if (!made.ok()) return made.status();
  ConcurrencyLimiter* limiter = made->get();
  auto* gradient = dynamic_cast<GradientConcurrencyLimiter*>(limiter);

  std::vector<PhaseResult> r = EmptyPhases(c, policy.name);
  std::vector<std::vector<double>> latencies(phases), settled(phases);
  const auto workers_in = [&](int p) {
    return std::max(1, static_cast<int>(std::lround(c.workers * r[p].capacity)));
  };

  // Completions: (done, call index), earliest first.
  using Done = std::pair<absl::Duration, size_t>;
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> running;
  std::deque<size_t> queue;
  int workers = workers_in(0);
  int phase = 0;
  std::vector<LimitSample> ticks;
  absl::Duration next_tick = kTick;
  const absl::Duration end_of_arrivals = c.phase_length * phases;
  const absl::Duration settle = std::min(kSettle, c.phase_length / 2);

  const auto now = [&] { return clock.Now() - start; };
  const auto start_work = [&] {
    while (static_cast<int>(running.size()) < workers && !queue.empty()) {
      const size_t i = queue.front();
      queue.pop_front();
      running.push({now() + calls[i].service, i});
    }
  };
  size_t next = 0;
  while (next < calls.size() || !running.empty() || !queue.empty()) {
    // The next event: arrival, completion, phase change or tick.
    absl::Duration t = absl::InfiniteDuration();
    if (next < calls.size()) t = std::min(t, calls[next].arrival);
    if (!running.empty()) t = std::min(t, running.top().first);
    const absl::Duration next_phase = c.phase_length * (phase + 1);
    if (phase + 1 < phases) t = std::min(t, next_phase);
    if (next_tick <= end_of_arrivals) t = std::min(t, next_tick);
    if (t == absl::InfiniteDuration()) break;  // queued calls with no worker: cannot happen
    clock.SetTime(start + t);
    if (phase + 1 < phases && t == next_phase) {
      ++phase;
      workers = workers_in(phase);
      start_work();
      continue;
    }
    if (next_tick <= end_of_arrivals && t == next_tick) {
      if (limiter != nullptr) {
        ticks.push_back(
            LimitSample{t, limiter->limit(), gradient != nullptr && gradient->measuring()});
      }
      next_tick += kTick;
      continue;
    }
    if (!running.empty() && running.top().first == t) {
      const size_t i = running.top().second;
      running.pop();
      const Call& call = calls[i];
      const absl::Duration latency = t - call.arrival;
      const bool in_deadline = latency <= c.deadline;
      PhaseResult& pr = r[call.phase];
      if (in_deadline) {
        ++pr.completed_in_deadline;
      } else {
        ++pr.expired;
      }
      const double ms = absl::ToDoubleMilliseconds(latency);
      latencies[call.phase].push_back(ms);
      if (call.arrival - c.phase_length * call.phase >= settle) settled[call.phase].push_back(ms);
      // A call that ended past its deadline is a drop, as the server
      // interceptor reports it.
      if (limiter != nullptr) {
        limiter->Release(in_deadline ? Outcome::kSuccess : Outcome::kFailure, latency);
      }
      start_work();
      continue;
    }
    // An arrival.
    const Call& call = calls[next];
    PhaseResult& pr = r[call.phase];
    ++pr.offered;
    if (limiter != nullptr && !limiter->TryAcquire()) {
      ++pr.rejected;
    } else {
      ++pr.admitted;
      queue.push_back(next);
      start_work();
    }
    ++next;
  }

  PolicyRun run;
  int64_t in_deadline = 0;
  Summarize(c, limiter != nullptr, ticks, latencies, settled, r);
  for (const PhaseResult& pr : r) in_deadline += pr.completed_in_deadline;
  run.phases = std::move(r);
  run.total_goodput = in_deadline / absl::ToDoubleSeconds(c.phase_length * phases);
  return run;
}

}  // namespace

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

void Summarize(const Config& c, bool has_limit, const std::vector<LimitSample>& ticks,
               std::vector<std::vector<double>>& latencies,
               std::vector<std::vector<double>>& settled, std::vector<PhaseResult>& r) {
  const double seconds = absl::ToDoubleSeconds(c.phase_length);
  for (size_t p = 0; p < r.size(); ++p) {
    PhaseResult& pr = r[p];
    pr.offered_per_second = pr.offered / seconds;
    pr.goodput_per_second = pr.completed_in_deadline / seconds;
    pr.p50_ms = Percentile(latencies[p], 0.5);
    pr.p99_ms = Percentile(latencies[p], 0.99);
    pr.settled_p99_ms = Percentile(settled[p], 0.99);
    // The limit during the phase.
    const absl::Duration from = c.phase_length * static_cast<int64_t>(p);
    const absl::Duration to = from + c.phase_length;
    std::vector<const LimitSample*> in_phase;
    for (const LimitSample& tick : ticks) {
      if (tick.at > from && tick.at <= to) in_phase.push_back(&tick);
    }
    if (!in_phase.empty()) {
      double sum = 0;
      for (const LimitSample* tick : in_phase) sum += static_cast<double>(tick->limit);
      pr.mean_limit = sum / static_cast<double>(in_phase.size());
    }
    const bool changed = p > 0 && r[p - 1].capacity != pr.capacity;
    if (!has_limit || !changed) continue;
    std::vector<double> second_half;
    for (const LimitSample* tick : in_phase) {
      if (!tick->measuring && tick->at > from + c.phase_length / 2) {
        second_half.push_back(static_cast<double>(tick->limit));
      }
    }
    const double settled_limit = Percentile(second_half, 0.5);
    pr.converge_seconds = 0;
    for (const LimitSample* tick : in_phase) {
      if (tick->measuring) continue;
      if (std::abs(static_cast<double>(tick->limit) - settled_limit) > 0.25 * settled_limit) {
        pr.converge_seconds = absl::ToDoubleSeconds(tick->at - from);
      }
    }
  }
}

std::string SvgOpening(int width, int height, int left, const std::string& title) {
  return absl::StrFormat(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      R"(<text x="%d" y="24" font-size="14">%s</text>)"
      "\n",
      width, height, left, title);
}

std::string PolicyFileJson(const Policy& policy) {
  if (policy.throttle_json.empty()) return "{}";
  return absl::StrCat(R"({"methodConfig": [{"name": [{}], "throttle": )", policy.throttle_json,
                      "}]}");
}

std::vector<PhaseResult> EmptyPhases(const Config& c, const std::string& policy) {
  std::vector<PhaseResult> r(c.loads.size() * c.capacities.size());
  for (size_t p = 0; p < r.size(); ++p) {
    r[p].policy = policy;
    r[p].phase = static_cast<int>(p);
    r[p].load = c.loads[p / c.capacities.size()];
    r[p].capacity = c.capacities[p % c.capacities.size()];
  }
  return r;
}

std::vector<Policy> DefaultPolicies(const Config& c) {
  const int n = c.workers;
  return {
      {"none", ""},
      {"fixed_right", absl::StrCat(R"({"maxConcurrency": )", n, "}")},
      {"fixed_2x_high", absl::StrCat(R"({"maxConcurrency": )", 2 * n, "}")},
      {"fixed_2x_low", absl::StrCat(R"({"maxConcurrency": )", std::max(1, n / 2), "}")},
      {"adaptive", R"({"adaptive": {}})"},
      {"adaptive_aimd", R"({"adaptive": {"algorithm": "AIMD"}})"},
  };
}

absl::Status ValidateConfig(const Config& config) {
  if (config.loads.empty() || config.capacities.empty() || config.workers < 1 ||
      config.service_time <= absl::ZeroDuration() || config.phase_length <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("overload: empty loads or capacities, or a bad backend");
  }
  return absl::OkStatus();
}

absl::StatusOr<Result> RunSimulated(const Config& config, const std::vector<Policy>& policies) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  Result result;
  result.config = config;
  // The unloaded latency: 0.1 C, no limit, 10 s.
  {
    Config light = config;
    light.loads = {0.1};
    light.capacities = {1};
    light.phase_length = absl::Seconds(10);
    const std::vector<Call> calls = MakeCalls(light, 1);
    absl::StatusOr<PolicyRun> run = RunPolicy(light, Policy{"none", ""}, calls, 1);
    if (!run.ok()) return run.status();
    result.unloaded_p99_ms = run->phases[0].p99_ms;
  }
  const int phases = static_cast<int>(config.loads.size() * config.capacities.size());
  const std::vector<Call> calls = MakeCalls(config, phases);
  std::vector<PolicyRun> runs;
  for (const Policy& policy : policies) {
    absl::StatusOr<PolicyRun> run = RunPolicy(config, policy, calls, phases);
    if (!run.ok()) return run.status();
    result.total_goodput.emplace_back(policy.name, run->total_goodput);
    runs.push_back(*std::move(run));
  }
  for (int p = 0; p < phases; ++p) {
    for (const PolicyRun& run : runs) result.phases.push_back(run.phases[p]);
  }
  return result;
}

std::string ToJson(const Result& r) {
  const Config& c = r.config;
  std::string out = absl::StrFormat(
      "{\n  \"config\": {\"workers\": %d, \"service_time_ms\": %g, \"deadline_ms\": %g, "
      "\"phase_seconds\": %g, \"capacity_per_second\": %g, \"seed\": %d},\n"
      "  \"unloaded_p99_ms\": %.3f,\n  \"phases\": [\n",
      c.workers, absl::ToDoubleMilliseconds(c.service_time),
      absl::ToDoubleMilliseconds(c.deadline), absl::ToDoubleSeconds(c.phase_length),
      c.workers / absl::ToDoubleSeconds(c.service_time), c.seed, r.unloaded_p99_ms);
  for (size_t i = 0; i < r.phases.size(); ++i) {
    const PhaseResult& p = r.phases[i];
    absl::StrAppendFormat(
        &out,
        "    {\"phase\": %d, \"policy\": \"%s\", \"load\": %g, \"capacity\": %g, "
        "\"offered_per_second\": %.1f, \"goodput_per_second\": %.1f, \"offered\": %d, "
        "\"admitted\": %d, \"rejected\": %d, \"completed_in_deadline\": %d, \"expired\": %d, "
        "\"unsent\": %d, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"settled_p99_ms\": %.3f, "
        "\"mean_limit\": %.2f, \"converge_seconds\": %g}%s\n",
        p.phase, p.policy, p.load, p.capacity, p.offered_per_second, p.goodput_per_second,
        p.offered, p.admitted, p.rejected, p.completed_in_deadline, p.expired, p.unsent, p.p50_ms,
        p.p99_ms, p.settled_p99_ms, p.mean_limit, p.converge_seconds,
        i + 1 < r.phases.size() ? "," : "");
  }
  out += "  ],\n  \"total_goodput_per_second\": {";
  for (size_t i = 0; i < r.total_goodput.size(); ++i) {
    absl::StrAppendFormat(&out, "%s\"%s\": %.1f", i == 0 ? "" : ", ", r.total_goodput[i].first,
                          r.total_goodput[i].second);
  }
  out += "},\n  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) {
    absl::StrAppendFormat(&out, "%s\"%s\"", i == 0 ? "" : ", ", absl::CEscape(r.notes[i]));
  }
  out += "]\n}\n";
  return out;
}

std::string ToCsv(const Result& r) {
  std::string out = "phase,label";
  for (const auto& [name, goodput] : r.total_goodput) absl::StrAppend(&out, ",", name);
  out += "\n";
  const size_t n = r.total_goodput.size();
  for (size_t i = 0; n > 0 && i < r.phases.size(); i += n) {
    const PhaseResult& p = r.phases[i];
    absl::StrAppendFormat(&out, "%d,%gC@%gC", p.phase, p.load, p.capacity);
    for (size_t k = 0; k < n; ++k) {
      absl::StrAppendFormat(&out, ",%.1f", r.phases[i + k].goodput_per_second);
    }
    out += "\n";
  }
  return out;
}

std::string ToTable(const Result& r) {
  std::string out = absl::StrFormat(
      "overload experiment: %d workers x %gms (C = %g/s), deadline %gms, %gs phases; unloaded "
      "p99 %.2fms\n\n",
      r.config.workers, absl::ToDoubleMilliseconds(r.config.service_time),
      r.config.workers / absl::ToDoubleSeconds(r.config.service_time),
      absl::ToDoubleMilliseconds(r.config.deadline), absl::ToDoubleSeconds(r.config.phase_length),
      r.unloaded_p99_ms);
  absl::StrAppendFormat(&out, "%5s %5s %4s  %-14s %9s %9s %8s %8s %8s %8s %7s %8s\n", "phase",
                        "load", "cap", "policy", "offered/s", "goodput/s", "rejected", "p50ms",
                        "p99ms", "sp99ms", "limit", "conv_s");
  for (const PhaseResult& p : r.phases) {
    absl::StrAppendFormat(&out, "%5d %5g %4g  %-14s %9.0f %9.0f %8d %8.1f %8.1f %8.1f %7.1f %8s\n",
                          p.phase, p.load, p.capacity, p.policy, p.offered_per_second,
                          p.goodput_per_second, p.rejected, p.p50_ms, p.p99_ms, p.settled_p99_ms,
                          p.mean_limit,
                          p.converge_seconds < 0 ? "-" : absl::StrFormat("%.1f", p.converge_seconds));
  }
  out += "\ngoodput over the whole run (calls within deadline / s):\n";
  for (const auto& [name, goodput] : r.total_goodput) {
    absl::StrAppendFormat(&out, "  %-14s %8.1f\n", name, goodput);
  }
  for (const PhaseResult& p : r.phases) {
    if (p.unsent > 0) {
      absl::StrAppendFormat(&out, "phase %d, %s: %d of %d arrivals not sent (the load generator "
                            "fell more than a deadline behind)\n",
                            p.phase, p.policy, p.unsent, p.offered);
    }
  }
  for (const std::string& note : r.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

}  // namespace overload
