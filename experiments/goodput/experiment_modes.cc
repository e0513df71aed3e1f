#include "experiments/goodput/experiment_modes.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "examples/common/command_line.h"
#include "experiments/goodput/experiment_flags.h"
#include "experiments/goodput/fate_export.h"
#include "experiments/goodput/goodput.h"
#include "experiments/goodput/live_run.h"
#include "experiments/goodput/probe_schedule_bound.h"
#include "experiments/goodput/scenarios.h"
#include "experiments/goodput/suite.h"

namespace goodput {

int WriteJson(const std::string& json) {
  if (absl::GetFlag(FLAGS_json)) std::printf("%s\n", json.c_str());
  if (const std::string path = absl::GetFlag(FLAGS_json_file); !path.empty()) {
    std::ofstream file(path);
    file << json << "\n";
    if (!file.flush()) {
      std::fprintf(stderr, "goodput_experiment: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

int RunSuiteMode() {
  SuiteOptions options;
  if (const std::string f = absl::GetFlag(FLAGS_families); !f.empty()) {
    options.families = absl::StrSplit(f, ',');
  }
  options.rates.clear();
  for (absl::string_view r : absl::StrSplit(absl::GetFlag(FLAGS_rates), ',')) {
    int rate = 0;
    if (!absl::SimpleAtoi(r, &rate)) {
      return example_cli::UsageError(absl::StrCat("--rates: not a number: \"", r, "\""));
    }
    options.rates.push_back(rate);
  }
  const int seeds = absl::GetFlag(FLAGS_seeds);
  if (seeds < 1 || seeds > 100) {
    return example_cli::UsageError(absl::StrCat("--seeds: must be in [1, 100], got ", seeds));
  }
  options.seeds.clear();
  for (int i = 1; i <= seeds; ++i) options.seeds.push_back(static_cast<uint64_t>(i));
  if (const double seconds = absl::GetFlag(FLAGS_seconds); seconds != 0) {
    if (!(seconds >= 1 && seconds <= 86400)) {
      return example_cli::UsageError(
          absl::StrFormat("--seconds: must be in [1, 86400], got %g", seconds));
    }
    options.length = absl::Seconds(seconds);
  }
  if (const std::string dir = absl::GetFlag(FLAGS_export_fates); !dir.empty()) {
    if (absl::Status s = ExportFates(dir, options); !s.ok()) {
      std::fprintf(stderr, "goodput_experiment: --export_fates: %s\n",
                   std::string(s.message()).c_str());
      return 1;
    }
    return 0;
  }
  std::vector<Policy> policies = StandardPolicies();
  for (absl::string_view extra :
       absl::StrSplit(absl::GetFlag(FLAGS_extra_policies), ';', absl::SkipWhitespace())) {
    const size_t eq = extra.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return example_cli::UsageError(
          absl::StrCat("--extra_policies: expected NAME=BREAKER_JSON, got \"", extra, "\""));
    }
    Policy p{std::string(extra.substr(0, eq)), std::string(extra.substr(eq + 1))};
    if (absl::Status s = CheckPolicy(p); !s.ok()) {
      return example_cli::UsageError(absl::StrCat("--extra_policies: ", s.message()));
    }
    policies.push_back(std::move(p));
  }
  if (const std::string probe = absl::GetFlag(FLAGS_recovery_probe); !probe.empty()) {
    absl::Duration interval;
    if (!absl::ParseDuration(probe, &interval) || interval < absl::Milliseconds(1)) {
      return example_cli::UsageError(
          absl::StrCat("--recovery_probe: expected a duration of at least 1ms, got \"", probe, "\""));
    }
    for (const Policy& p : StandardPolicies()) {
      if (p.key == "recommended") policies.push_back(WithRecoveryProbe(p, interval));
    }
  }
  absl::StatusOr<std::vector<SuiteRow>> rows = RunSuite(options, policies);
  if (!rows.ok()) return example_cli::UsageError(std::string(rows.status().message()));
  std::string json = "{\"suite\": [";
  if (!absl::GetFlag(FLAGS_json)) {
    std::printf("breaker-quality suite: %zu seeds x %.0f s per family and rate\n",
                options.seeds.size(), absl::ToDoubleSeconds(options.length));
  }
  std::string last_block;
  for (size_t i = 0; i < rows->size(); ++i) {
    const SuiteRow& row = (*rows)[i];
    const Metrics& m = row.metrics;
    const std::string block = absl::StrCat(row.family, " @ ", row.calls_per_second, " calls/s");
    if (!absl::GetFlag(FLAGS_json)) {
      if (block != last_block) {
        std::printf("\n%s (%zu outages)\n%-22s %8s %8s %9s %9s %9s %9s\n", block.c_str(),
                    m.recovery99_per_outage.size(), "policy", "goodput", "waste", "first_ok",
                    "first_max", "rec99", "rec99_max");
        last_block = block;
      }
      std::printf("%-22s %8.4f %8.4f %8.3fs %8.3fs %8.3fs %8.3fs", row.policy.c_str(),
                  m.goodput_ratio, m.waste_ratio, m.first_success_seconds,
                  m.first_success_max_seconds, m.recovery99_seconds, m.recovery99_max_seconds);
      if (m.probes > 0) std::printf("  %lld probes", static_cast<long long>(m.probes));
      std::printf("\n");
    }
    absl::StrAppendFormat(
        &json,
        "%s{\"family\": \"%s\", \"calls_per_second\": %d, \"policy\": \"%s\", "
        "\"offered\": %d, \"succeeded\": %d, \"oracle_succeeded\": %d, "
        "\"reached_failing_backend\": %d, \"goodput_ratio\": %.6f, \"waste_ratio\": %.6f, "
        "\"outages\": %d, \"first_success_seconds\": %.4f, "
        "\"first_success_max_seconds\": %.4f, \"recovery99_seconds\": %.4f, "
        "\"recovery99_max_seconds\": %.4f, \"probes\": %d}",
        i ? ", " : "", row.family, row.calls_per_second, row.policy, m.offered, m.succeeded,
        m.oracle_succeeded, m.reached_failing_backend, m.goodput_ratio, m.waste_ratio,
        m.recovery99_per_outage.size(), m.first_success_seconds, m.first_success_max_seconds,
        m.recovery99_seconds, m.recovery99_max_seconds, m.probes);
  }
  json += "]}";
  if (!absl::GetFlag(FLAGS_json)) {
    // The Pareto check against our anchors (experiments/peers/ does the same
    // against the peers): a policy dominates recommended in a block when its
    // goodput is >= and its waste <=, one of them strictly.
    std::vector<std::string> dominated;
    std::map<std::string, const Metrics*> recommended;
    for (const SuiteRow& row : *rows) {
      if (row.policy == "recommended") {
        recommended[absl::StrCat(row.family, " @ ", row.calls_per_second)] = &row.metrics;
      }
    }
    for (const SuiteRow& row : *rows) {
      const std::string block = absl::StrCat(row.family, " @ ", row.calls_per_second);
      const Metrics* rec = recommended[block];
      if (rec == nullptr || row.policy == "recommended") continue;
      const Metrics& m = row.metrics;
      if (m.goodput_ratio >= rec->goodput_ratio && m.waste_ratio <= rec->waste_ratio &&
          (m.goodput_ratio > rec->goodput_ratio || m.waste_ratio < rec->waste_ratio)) {
        dominated.push_back(absl::StrCat(block, ": ", row.policy));
      }
    }
    std::printf("\nPareto: another policy has goodput >= and waste <= recommended's (one "
                "strictly) in %zu of %zu family/rate blocks%s%s\n",
                dominated.size(), recommended.size(), dominated.empty() ? "" : ": ",
                absl::StrJoin(dominated, "; ").c_str());
  }
  return WriteJson(json);
}

namespace {

std::string Gaps(const ProbeSchedule& schedule, size_t n) {
  std::string out;
  int64_t last = 0;
  for (size_t i = 0; i < schedule.size() && i < n; ++i) {
    absl::StrAppend(&out, i ? " " : "", schedule[i] - last);
    last = schedule[i];
  }
  if (schedule.size() > n) absl::StrAppend(&out, " ...");
  return out;
}

}  // namespace

int RunProbeBoundMode() {
  const int seeds = absl::GetFlag(FLAGS_seeds);
  if (seeds < 1 || seeds > 100) {
    return example_cli::UsageError(absl::StrCat("--seeds: must be in [1, 100], got ", seeds));
  }
  // The suite's rates include 1000 calls/s, which the bound does not
  // model: given those (the default), it takes the two it does.
  std::string rates_flag = absl::GetFlag(FLAGS_rates);
  if (rates_flag == kSuiteRates) rates_flag = "10,100";
  std::vector<int> rates;
  for (absl::string_view r : absl::StrSplit(rates_flag, ',')) {
    int rate = 0;
    if (!absl::SimpleAtoi(r, &rate) || (rate != 10 && rate != 100)) {
      return example_cli::UsageError(
          absl::StrCat("--probe_bound: --rates must be 10 and/or 100, got \"", r, "\""));
    }
    rates.push_back(rate);
  }
  const absl::Duration length = absl::Seconds(300);
  // The length distribution, from 300 runs the measured seeds are not among.
  constexpr int kFirstDistributionSeed = 1001;
  constexpr int kDistributionRuns = 300;
  for (int rate : rates) {
    std::vector<Scenario> scenarios;
    OutageSample measured, distribution;
    for (int seed = 1; seed <= seeds; ++seed) {
      scenarios.push_back(*MakeScenario("outage", length, rate, seed));
      measured.Add(scenarios.back());
    }
    for (int seed = kFirstDistributionSeed; seed < kFirstDistributionSeed + kDistributionRuns;
         ++seed) {
      distribution.Add(*MakeScenario("outage", length, rate, seed));
    }
    // The experiment's own goodput and waste of a schedule on the measured
    // seeds, call by call. Waste is over the calls of the down periods
    // (what the no-breaker run sends to the dead backend; RunMatchesTheModel
    // checks that they are the same).
    auto run = [&](const ProbeSchedule& schedule) {
      Metrics total;
      for (size_t i = 0; i < scenarios.size(); ++i) {
        Metrics m = RunProbeSchedule(scenarios[i], schedule, i + 1);
        m.per_call.clear();
        total.Merge(m);
      }
      total.waste_ratio = static_cast<double>(total.reached_failing_backend) /
                          static_cast<double>(measured.down_calls());
      return total;
    };
    // The same from the model on the distribution sample.
    auto model = [&](const ProbeSchedule& schedule, double* goodput, double* waste) {
      const ScheduleCost c = CostOf(schedule, distribution);
      *goodput = 1.0 - static_cast<double>(c.lost) / distribution.healthy_calls;
      *waste = static_cast<double>(c.probes + static_cast<int64_t>(distribution.outages.size())) /
               distribution.down_calls();
    };
    std::printf("outage family at %d calls/s\n  measured: seeds 1-%d x 300 s, %zu outages, "
                "%lld calls down, %lld healthy\n  distribution: seeds %d-%d, %zu outages, "
                "%lld calls down, %lld healthy\n",
                rate, seeds, measured.outages.size(),
                static_cast<long long>(measured.down_calls()),
                static_cast<long long>(measured.healthy_calls), kFirstDistributionSeed,
                kFirstDistributionSeed + kDistributionRuns - 1, distribution.outages.size(),
                static_cast<long long>(distribution.down_calls()),
                static_cast<long long>(distribution.healthy_calls));
    std::printf("  fixed spacing: a probe every k calls after the detection call\n"
                "  %6s %8s %8s %10s %8s\n", "k", "goodput", "waste", "dist.good", "waste");
    for (int k : {2, 3, 4, 5, 6, 8, 10, 12, 15, 20}) {
      ProbeSchedule fixed;
      for (int64_t a = k; a <= 20 * rate + k; a += k) fixed.push_back(a);
      const Metrics m = run(fixed);
      double g = 0, w = 0;
      model(fixed, &g, &w);
      std::printf("  %6d %8.4f %8.4f %10.4f %8.4f\n", k, m.goodput_ratio, m.waste_ratio, g, w);
    }
    std::printf("  the best schedule of any shape for the distribution (least probes + lambda * "
                "lost, dynamic programming),\n  run on the measured seeds and on the "
                "distribution\n  %6s %8s %8s %10s %8s  %s\n",
                "lambda", "goodput", "waste", "dist.good", "waste",
                "gaps between probes, in calls");
    for (double lambda : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0}) {
      const BestSchedule best = OptimalSchedule(distribution, lambda);
      const Metrics m = run(best.schedule);
      double g = 0, w = 0;
      model(best.schedule, &g, &w);
      std::printf("  %6.1f %8.4f %8.4f %10.4f %8.4f  %s\n", lambda, m.goodput_ratio,
                  m.waste_ratio, g, w, Gaps(best.schedule, 12).c_str());
    }
    for (bool detection : {true, false}) {
      const Feasibility f = CheckTargets(distribution, 0.10, 0.01, detection);
      std::printf("  distribution, goodput >= 0.99 and waste <= 0.10, detection calls %s: %s "
                  "(margin %+.4f of the down calls at lambda %.2f)\n",
                  detection ? "counted" : "free", f.margin > 0 ? "UNREACHABLE" : "not ruled out",
                  f.margin, f.lambda);
    }
    const Feasibility hindsight = CheckTargets(measured, 0.10, 0.01, true);
    const Metrics h = run(hindsight.best.schedule);
    std::printf("  measured seeds with hindsight (a schedule fitted to their %zu outage "
                "lengths): %s (margin %+.4f; goodput %.4f, waste %.4f)\n",
                measured.outages.size(), hindsight.margin > 0 ? "UNREACHABLE" : "not ruled out",
                hindsight.margin, h.goodput_ratio, h.waste_ratio);
  }
  return 0;
}

int RunLiveMode() {
  LiveOptions options;
  if (const double seconds = absl::GetFlag(FLAGS_seconds); seconds != 0) {
    if (!(seconds >= 1 && seconds <= 3600)) {
      return example_cli::UsageError(
          absl::StrFormat("--seconds: must be in [1, 3600] for live, got %g", seconds));
    }
    options.length = absl::Seconds(seconds);
  }
  options.seed = absl::GetFlag(FLAGS_seed);
  const std::vector<Period> schedule = LiveSchedule(options.length, options.seed);
  const std::vector<Policy> policies = StandardPolicies();
  absl::StatusOr<std::vector<Metrics>> results =
      RunLive(schedule, policies, options);
  if (!results.ok()) {
    std::fprintf(stderr, "goodput_experiment: live: %s\n",
                 std::string(results.status().message()).c_str());
    return 1;
  }
  SetWasteRatios(*results, 0);
  std::printf("live: %zu periods (healthy 2-8 s, down 1-4 s), %.0f s, %d callers x %d calls/s "
              "per policy, %s per call on the server, real clock\n",
              schedule.size(), absl::ToDoubleSeconds(options.length), options.callers,
              options.calls_per_second, absl::FormatDuration(options.latency).c_str());
  std::printf("%-22s %9s %9s %9s %9s %8s %8s %9s %9s %9s\n", "policy", "offered", "succeeded",
              "rejected", "oracle", "goodput", "waste", "first_ok", "rec99", "rec99_max");
  std::string json = "{\"live\": {";
  for (size_t p = 0; p < policies.size(); ++p) {
    const Metrics& m = (*results)[p];
    std::printf("%-22s %9ld %9ld %9ld %9ld %8.4f %8.4f %8.3fs %8.3fs %8.3fs\n",
                policies[p].key.c_str(), (long)m.offered, (long)m.succeeded,
                (long)m.rejected_locally, (long)m.oracle_succeeded, m.goodput_ratio,
                m.waste_ratio, m.first_success_seconds, m.recovery99_seconds,
                m.recovery99_max_seconds);
    absl::StrAppendFormat(&json,
                          "%s\"%s\": {\"offered\": %d, \"succeeded\": %d, "
                          "\"goodput_ratio\": %.6f, \"waste_ratio\": %.6f, "
                          "\"recovery99_seconds\": %.4f, \"recovery99_max_seconds\": %.4f}",
                          p ? ", " : "", policies[p].key, m.offered, m.succeeded,
                          m.goodput_ratio, m.waste_ratio, m.recovery99_seconds,
                          m.recovery99_max_seconds);
  }
  json += "}}";
  if (const std::string path = absl::GetFlag(FLAGS_json_file); !path.empty()) {
    std::ofstream file(path);
    file << json << "\n";
    if (!file.flush()) return 1;
  }
  return 0;
}

}  // namespace goodput
