#include "experiments/overload/criticality_mix.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/overload/simulated_throttle.h"
#include "experiments/overload/worker_queue_simulation.h"
#include "grpc_resilience/criticality_level.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"

namespace overload {
namespace {

using resilience::Criticality;
using resilience::Outcome;

struct MixCall {
  absl::Duration arrival;
  absl::Duration service;
  bool critical;
};

std::vector<MixCall> MakeMixCalls(const MixConfig& c) {
  resilience::SplitMixRandom arrivals(c.seed);
  resilience::SplitMixRandom services(c.seed ^ 0x9e3779b97f4a7c15ULL);
  resilience::SplitMixRandom classes(c.seed ^ 0x5851f42d4c957f2dULL);
  const double rate = c.load * c.workers / absl::ToDoubleSeconds(c.service_time);
  const double end = absl::ToDoubleSeconds(c.duration);
  std::vector<MixCall> calls;
  double t = 0;
  while (true) {
    t += -std::log(1.0 - arrivals.NextUniform()) / rate;
    if (t >= end) break;
    calls.push_back(MixCall{absl::Seconds(t), c.service_time * (0.5 + services.NextUniform()),
                            classes.NextUniform() < c.critical_fraction});
  }
  return calls;
}

// The throttle of `policy` as the server builds it; the scenario needs its
// concurrency limit.
absl::StatusOr<SimulatedThrottle> MakeThrottle(const Policy& policy, resilience::Clock& clock) {
  absl::StatusOr<SimulatedThrottle> t = SimulatedThrottle::Create(policy, clock);
  if (t.ok() && t->limiter == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.name, ": no concurrency limit"));
  }
  return t;
}

absl::StatusOr<MixRun> RunOne(const MixConfig& c, const Policy& policy, bool honour,
                              const std::vector<MixCall>& calls,
                              const std::vector<WorkerQueueSimulation::Call>& timing) {
  resilience::SimulatedClock clock;
  absl::StatusOr<SimulatedThrottle> throttle = MakeThrottle(policy, clock);
  if (!throttle.ok()) return throttle.status();
  MixRun run;
  run.policy = policy.name;
  run.honoured = honour;
  const auto admit = [&](size_t i) {
    ClassResult& r = calls[i].critical ? run.critical : run.sheddable;
    ++r.offered;
    const Criticality level =
        honour && !calls[i].critical ? Criticality::kSheddable : Criticality::kCritical;
    if (throttle->shares.TryAcquire(*throttle->limiter, level)) return true;
    ++r.rejected;
    return false;
  };
  const auto finish = [&](size_t i, absl::Duration latency) {
    const bool in_deadline = latency <= c.deadline;
    ClassResult& r = calls[i].critical ? run.critical : run.sheddable;
    ++(in_deadline ? r.ok_in_deadline : r.late);
    throttle->limiter->Release(in_deadline ? Outcome::kSuccess : Outcome::kFailure, latency);
  };
  WorkerQueueSimulation(c.workers, clock).Run(timing, admit, finish);
  run.goodput_per_second = (run.critical.ok_in_deadline + run.sheddable.ok_in_deadline) /
                           absl::ToDoubleSeconds(c.duration);
  return run;
}

}  // namespace

std::vector<Policy> MixPolicies(const MixConfig& c) {
  return {
      {"fixed", absl::StrCat(R"({"maxConcurrency": )", c.workers, "}")},
      {"fixed-2x", absl::StrCat(R"({"maxConcurrency": )", 2 * c.workers, "}")},
      {"adaptive", R"({"adaptive": {}})"},
  };
}

absl::StatusOr<MixResult> RunMixSimulated(const MixConfig& config,
                                          const std::vector<Policy>& policies) {
  if (config.workers < 1 || config.service_time <= absl::ZeroDuration() ||
      config.duration <= absl::ZeroDuration() || !(config.load > 0) ||
      !(config.critical_fraction >= 0 && config.critical_fraction <= 1)) {
    return absl::InvalidArgumentError(
        "criticality mix: workers >= 1, service_time and duration > 0, load > 0, "
        "critical_fraction in [0, 1]");
  }
  const std::vector<MixCall> calls = MakeMixCalls(config);
  std::vector<WorkerQueueSimulation::Call> timing;
  for (const MixCall& call : calls) timing.push_back({call.arrival, call.service});
  MixResult result;
  result.config = config;
  for (const Policy& policy : policies) {
    for (const bool honour : {true, false}) {
      absl::StatusOr<MixRun> run = RunOne(config, policy, honour, calls, timing);
      if (!run.ok()) return run.status();
      result.runs.push_back(*std::move(run));
    }
  }
  return result;
}

std::string MixToJson(const MixResult& r) {
  const auto cls = [](const ClassResult& c) {
    return absl::StrFormat(
        R"({"offered": %d, "rejected": %d, "ok_in_deadline": %d, "late": %d, "ok_fraction": %.4f})",
        c.offered, c.rejected, c.ok_in_deadline, c.late, c.ok_fraction());
  };
  std::string out = absl::StrFormat(
      R"({"config": {"workers": %d, "service_time_ms": %.1f, "deadline_ms": %.1f, )"
      R"("duration_s": %.1f, "load": %.2f, "critical_fraction": %.2f, "seed": %d}, "runs": [)",
      r.config.workers, absl::ToDoubleMilliseconds(r.config.service_time),
      absl::ToDoubleMilliseconds(r.config.deadline), absl::ToDoubleSeconds(r.config.duration),
      r.config.load, r.config.critical_fraction, r.config.seed);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const MixRun& run = r.runs[i];
    absl::StrAppend(&out, i == 0 ? "\n  " : ",\n  ",
                    absl::StrFormat(R"({"policy": "%s", "criticality": "%s", )"
                                    R"("goodput_per_second": %.1f, "CRITICAL": %s, "SHEDDABLE": %s})",
                                    run.policy, run.honoured ? "honoured" : "ignored",
                                    run.goodput_per_second, cls(run.critical), cls(run.sheddable)));
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

std::string MixToTable(const MixResult& r) {
  std::string out = absl::StrFormat(
      "%-10s %-9s %12s %12s %12s %12s %10s\n", "policy", "header", "CRITICAL ok", "CRIT reject",
      "SHEDD ok", "SHEDD reject", "goodput/s");
  for (const MixRun& run : r.runs) {
    absl::StrAppend(
        &out, absl::StrFormat("%-10s %-9s %11.2f%% %11.2f%% %11.2f%% %11.2f%% %10.1f\n",
                              run.policy, run.honoured ? "honoured" : "ignored",
                              100 * run.critical.ok_fraction(),
                              run.critical.offered == 0
                                  ? 0.0
                                  : 100.0 * run.critical.rejected / run.critical.offered,
                              100 * run.sheddable.ok_fraction(),
                              run.sheddable.offered == 0
                                  ? 0.0
                                  : 100.0 * run.sheddable.rejected / run.sheddable.offered,
                              run.goodput_per_second));
  }
  for (const std::string& note : r.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

std::string MixToSvg(const MixResult& r, const std::string& title) {
  constexpr int kLeft = 60, kTop = 50, kHeight = 300, kBar = 28, kGap = 24;
  const int width = kLeft + static_cast<int>(r.runs.size()) * (2 * kBar + kGap) + 180;
  const int height = kTop + kHeight + 70;
  const auto y = [&](double fraction) { return kTop + kHeight * (1.0 - fraction); };
  std::string svg = SvgOpening(width, height, kLeft, title);
  for (int pct = 0; pct <= 100; pct += 20) {
    absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>)"
                                          R"(<text x="%d" y="%.1f" text-anchor="end">%d%%</text>)"
                                          "\n",
                                          kLeft, width - 180, y(pct / 100.0), y(pct / 100.0),
                                          kLeft - 6, y(pct / 100.0) + 4, pct));
  }
  absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4 3"/>)"
                                        R"(<text x="%d" y="%.1f" fill="#c00">99%% target</text>)"
                                        "\n",
                                        kLeft, width - 180, y(0.99), y(0.99), width - 175,
                                        y(0.99) + 4));
  int x = kLeft + kGap / 2;
  for (const MixRun& run : r.runs) {
    for (const auto& [fraction, color] : {std::pair{run.critical.ok_fraction(), "#1f77b4"},
                                          std::pair{run.sheddable.ok_fraction(), "#ff7f0e"}}) {
      absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>)"
                                            R"(<text x="%d" y="%.1f" text-anchor="middle" font-size="10">%.1f</text>)"
                                            "\n",
                                            x, y(fraction), kBar - 2, kHeight * fraction, color,
                                            x + kBar / 2, y(fraction) - 3, 100 * fraction));
      x += kBar;
    }
    absl::StrAppend(&svg, absl::StrFormat(R"(<text x="%d" y="%d" text-anchor="middle">%s</text>)"
                                          R"(<text x="%d" y="%d" text-anchor="middle">%s</text>)"
                                          "\n",
                                          x - kBar, kTop + kHeight + 18, run.policy, x - kBar,
                                          kTop + kHeight + 34,
                                          run.honoured ? "header honoured" : "header ignored"));
    x += kGap;
  }
  absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%d" width="12" height="12" fill="#1f77b4"/>)"
                                        R"(<text x="%d" y="%d">CRITICAL OK in deadline</text>)"
                                        R"(<rect x="%d" y="%d" width="12" height="12" fill="#ff7f0e"/>)"
                                        R"(<text x="%d" y="%d">SHEDDABLE OK in deadline</text>)"
                                        "\n</svg>\n",
                                        width - 175, kTop + 30, width - 158, kTop + 41, width - 175,
                                        kTop + 50, width - 158, kTop + 61));
  return svg;
}

}  // namespace overload
