// goodput_experiment: seed 000's comparison of circuit breakers, made
// reproducible (see experiments/goodput/goodput.h).
//
//   goodput_experiment [--mode=simulated|grpc|live] [--seconds=N] [--seed=1] [--json]
//                      [--json_file=PATH] [--out=DIR]
//   goodput_experiment --suite [--families=a,b] [--rates=1000,100,10] [--seeds=3]
//                      [--seconds=300] [--extra_policies='name={...};...']
//                      [--export_fates=DIR] [--json] [--json_file=PATH]
//   goodput_experiment --probe_bound [--rates=10,100] [--seeds=3]
//
// --mode=simulated (default, 300 s schedules) runs the breakers against a
// simulated backend; --mode=grpc (default 60 s schedules) runs them inside
// the client interceptors over real gRPC to a CacheServer that fails calls as
// the schedule says; --mode=live (60 s) runs 4 concurrent callers per policy
// in real time (live_run.h). --suite runs the breaker-quality suite
// (suite.h, docs/breaker-quality.md); with --export_fates it writes the
// scenarios' per-call fates for experiments/peers/ instead (fate_export.h).
// --probe_bound prints the best probe schedules any breaker that learns only
// from its own calls can have on the outage family (probe_schedule_bound.h).
// Prints a table per schedule (outage, mixed); --json prints
// {"schedules": {"outage": {"policies": {"none": {...}, ...}}, "mixed": ...}};
// --out=DIR writes DIR/<schedule>.csv with the successes per second of each
// policy and the backend's state. --help prints the flags and exits 0; bad
// flags exit 2 with one line.

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/goodput/goodput.h"
#include "experiments/goodput/grpc_run.h"
#include "experiments/goodput/live_run.h"
#include "experiments/goodput/fate_export.h"
#include "experiments/goodput/probe_schedule_bound.h"
#include "experiments/goodput/scenarios.h"
#include "experiments/goodput/suite.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "examples/common/command_line.h"

ABSL_FLAG(double, seconds, 0,
          "Length of each schedule in seconds of the schedule; 0 = 300 (simulated), 60 (grpc).");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the schedules and the backend's draws.");
ABSL_FLAG(bool, json, false, "Print JSON instead of tables.");
ABSL_FLAG(std::string, json_file, "", "Also write the JSON into this file.");
ABSL_FLAG(std::string, out, "", "Write a CSV per schedule into this directory.");
ABSL_FLAG(bool, suite, false,
          "Run the breaker-quality suite instead: every scenario family at every rate and seed "
          "(simulated), one table row per family, rate and policy.");
ABSL_FLAG(std::string, families, "", "Suite: comma-separated families (default: all).");
// The suite's rates, --rates' default.
constexpr char kSuiteRates[] = "1000,100,10";
ABSL_FLAG(std::string, rates, kSuiteRates, "Suite: comma-separated calls per second.");
ABSL_FLAG(int, seeds, 3, "Suite: seeds 1..N per family and rate.");
ABSL_FLAG(std::string, export_fates, "",
          "Suite: instead of running, write the per-call fates of every scenario (and the "
          "reference runs of none and recommended) as JSON into this directory, for "
          "experiments/peers/.");
ABSL_FLAG(std::string, extra_policies, "",
          "Suite: more policies, NAME=BREAKER_JSON separated by ';' (BREAKER_JSON is a policy "
          "file's \"breaker\" object), e.g. 'fast={\"threeState\": {\"consecutiveFailures\": 5}}'.");
ABSL_FLAG(bool, probe_bound, false,
          "Instead of running breakers: the best probe schedule of any shape that a breaker "
          "learning only from its own calls can have on the outage family at --rates (10 and "
          "100 only), seeds 1..--seeds, and whether goodput >= 0.99 with waste <= 0.10 is "
          "reachable (docs/breaker-quality.md).");
ABSL_FLAG(std::string, mode, "simulated",
          "simulated (the breakers against a simulated backend), grpc (the client "
          "interceptors over real gRPC to a CacheServer with scheduled faults) or live "
          "(several concurrent callers per policy in real time, real latencies, a compressed "
          "outage schedule; --seconds default 60).");

constexpr char kUsage[] =
    "Seed 000's comparison of circuit breakers against scheduled outages, reproducible.\n\n"
    "  goodput_experiment [--mode=simulated|grpc|live] [--seconds=N] [--seed=1] [--json]\n"
    "                     [--json_file=PATH] [--out=DIR]\n"
    "  goodput_experiment --suite [--families=a,b] [--rates=1000,100,10] [--seeds=3]\n"
    "                     [--extra_policies=...] [--export_fates=DIR]\n"
    "  goodput_experiment --probe_bound [--rates=10,100] [--seeds=3]\n\n"
    "Prints a table per schedule (outage, mixed), or JSON with --json; --out=DIR writes\n"
    "DIR/<schedule>.csv. Exit status: 0 ok, 1 a run failed, 2 bad usage.";

namespace {

// WriteJson()
//
// The run's JSON to stdout (--json) and to --json_file: the exit status, 1
// when the file cannot be written.
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

// --suite: the breaker-quality suite (docs/breaker-quality.md).
int RunSuiteMode() {
  goodput::SuiteOptions options;
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
    if (absl::Status s = goodput::ExportFates(dir, options); !s.ok()) {
      std::fprintf(stderr, "goodput_experiment: --export_fates: %s\n",
                   std::string(s.message()).c_str());
      return 1;
    }
    return 0;
  }
  std::vector<goodput::Policy> policies = goodput::StandardPolicies();
  for (absl::string_view extra :
       absl::StrSplit(absl::GetFlag(FLAGS_extra_policies), ';', absl::SkipWhitespace())) {
    const size_t eq = extra.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return example_cli::UsageError(
          absl::StrCat("--extra_policies: expected NAME=BREAKER_JSON, got \"", extra, "\""));
    }
    goodput::Policy p{std::string(extra.substr(0, eq)), std::string(extra.substr(eq + 1))};
    if (absl::Status s = goodput::CheckPolicy(p); !s.ok()) {
      return example_cli::UsageError(absl::StrCat("--extra_policies: ", s.message()));
    }
    policies.push_back(std::move(p));
  }
  absl::StatusOr<std::vector<goodput::SuiteRow>> rows = goodput::RunSuite(options, policies);
  if (!rows.ok()) return example_cli::UsageError(std::string(rows.status().message()));
  std::string json = "{\"suite\": [";
  if (!absl::GetFlag(FLAGS_json)) {
    std::printf("breaker-quality suite: %zu seeds x %.0f s per family and rate\n",
                options.seeds.size(), absl::ToDoubleSeconds(options.length));
  }
  std::string last_block;
  for (size_t i = 0; i < rows->size(); ++i) {
    const goodput::SuiteRow& row = (*rows)[i];
    const goodput::Metrics& m = row.metrics;
    const std::string block = absl::StrCat(row.family, " @ ", row.calls_per_second, " calls/s");
    if (!absl::GetFlag(FLAGS_json)) {
      if (block != last_block) {
        std::printf("\n%s (%zu outages)\n%-22s %8s %8s %9s %9s %9s %9s\n", block.c_str(),
                    m.recovery99_per_outage.size(), "policy", "goodput", "waste", "first_ok",
                    "first_max", "rec99", "rec99_max");
        last_block = block;
      }
      std::printf("%-22s %8.4f %8.4f %8.3fs %8.3fs %8.3fs %8.3fs\n", row.policy.c_str(),
                  m.goodput_ratio, m.waste_ratio, m.first_success_seconds,
                  m.first_success_max_seconds, m.recovery99_seconds, m.recovery99_max_seconds);
    }
    absl::StrAppendFormat(
        &json,
        "%s{\"family\": \"%s\", \"calls_per_second\": %d, \"policy\": \"%s\", "
        "\"offered\": %d, \"succeeded\": %d, \"oracle_succeeded\": %d, "
        "\"reached_failing_backend\": %d, \"goodput_ratio\": %.6f, \"waste_ratio\": %.6f, "
        "\"outages\": %d, \"first_success_seconds\": %.4f, "
        "\"first_success_max_seconds\": %.4f, \"recovery99_seconds\": %.4f, "
        "\"recovery99_max_seconds\": %.4f}",
        i ? ", " : "", row.family, row.calls_per_second, row.policy, m.offered, m.succeeded,
        m.oracle_succeeded, m.reached_failing_backend, m.goodput_ratio, m.waste_ratio,
        m.recovery99_per_outage.size(), m.first_success_seconds, m.first_success_max_seconds,
        m.recovery99_seconds, m.recovery99_max_seconds);
  }
  json += "]}";
  if (!absl::GetFlag(FLAGS_json)) {
    // The Pareto check against our anchors (experiments/peers/ does the same
    // against the peers): a policy dominates recommended in a block when its
    // goodput is >= and its waste <=, one of them strictly.
    std::vector<std::string> dominated;
    std::map<std::string, const goodput::Metrics*> recommended;
    for (const goodput::SuiteRow& row : *rows) {
      if (row.policy == "recommended") {
        recommended[absl::StrCat(row.family, " @ ", row.calls_per_second)] = &row.metrics;
      }
    }
    for (const goodput::SuiteRow& row : *rows) {
      const std::string block = absl::StrCat(row.family, " @ ", row.calls_per_second);
      const goodput::Metrics* rec = recommended[block];
      if (rec == nullptr || row.policy == "recommended") continue;
      const goodput::Metrics& m = row.metrics;
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

// --probe_bound: experiments/goodput/probe_schedule_bound.h on the outage
// family.
std::string Gaps(const goodput::ProbeSchedule& schedule, size_t n) {
  std::string out;
  int64_t last = 0;
  for (size_t i = 0; i < schedule.size() && i < n; ++i) {
    absl::StrAppend(&out, i ? " " : "", schedule[i] - last);
    last = schedule[i];
  }
  if (schedule.size() > n) absl::StrAppend(&out, " ...");
  return out;
}

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
    std::vector<goodput::Scenario> scenarios;
    goodput::OutageSample measured, distribution;
    for (int seed = 1; seed <= seeds; ++seed) {
      scenarios.push_back(*goodput::MakeScenario("outage", length, rate, seed));
      measured.Add(scenarios.back());
    }
    for (int seed = kFirstDistributionSeed; seed < kFirstDistributionSeed + kDistributionRuns;
         ++seed) {
      distribution.Add(*goodput::MakeScenario("outage", length, rate, seed));
    }
    // The experiment's own goodput and waste of a schedule on the measured
    // seeds, call by call. Waste is over the calls of the down periods
    // (what the no-breaker run sends to the dead backend; RunMatchesTheModel
    // checks that they are the same).
    auto run = [&](const goodput::ProbeSchedule& schedule) {
      goodput::Metrics total;
      for (size_t i = 0; i < scenarios.size(); ++i) {
        goodput::Metrics m = goodput::RunProbeSchedule(scenarios[i], schedule, i + 1);
        m.per_call.clear();
        total.Merge(m);
      }
      total.waste_ratio = static_cast<double>(total.reached_failing_backend) /
                          static_cast<double>(measured.down_calls());
      return total;
    };
    // The same from the model on the distribution sample.
    auto model = [&](const goodput::ProbeSchedule& schedule, double* goodput, double* waste) {
      const goodput::ScheduleCost c = goodput::CostOf(schedule, distribution);
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
      goodput::ProbeSchedule fixed;
      for (int64_t a = k; a <= 20 * rate + k; a += k) fixed.push_back(a);
      const goodput::Metrics m = run(fixed);
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
      const goodput::BestSchedule best = goodput::OptimalSchedule(distribution, lambda);
      const goodput::Metrics m = run(best.schedule);
      double g = 0, w = 0;
      model(best.schedule, &g, &w);
      std::printf("  %6.1f %8.4f %8.4f %10.4f %8.4f  %s\n", lambda, m.goodput_ratio,
                  m.waste_ratio, g, w, Gaps(best.schedule, 12).c_str());
    }
    for (bool detection : {true, false}) {
      const goodput::Feasibility f = goodput::CheckTargets(distribution, 0.10, 0.01, detection);
      std::printf("  distribution, goodput >= 0.99 and waste <= 0.10, detection calls %s: %s "
                  "(margin %+.4f of the down calls at lambda %.2f)\n",
                  detection ? "counted" : "free", f.margin > 0 ? "UNREACHABLE" : "not ruled out",
                  f.margin, f.lambda);
    }
    const goodput::Feasibility hindsight = goodput::CheckTargets(measured, 0.10, 0.01, true);
    const goodput::Metrics h = run(hindsight.best.schedule);
    std::printf("  measured seeds with hindsight (a schedule fitted to their %zu outage "
                "lengths): %s (margin %+.4f; goodput %.4f, waste %.4f)\n",
                measured.outages.size(), hindsight.margin > 0 ? "UNREACHABLE" : "not ruled out",
                hindsight.margin, h.goodput_ratio, h.waste_ratio);
  }
  return 0;
}

// --mode=live: concurrent callers in real time (experiments/goodput/live_run.h).
int RunLiveMode() {
  goodput::LiveOptions options;
  if (const double seconds = absl::GetFlag(FLAGS_seconds); seconds != 0) {
    if (!(seconds >= 1 && seconds <= 3600)) {
      return example_cli::UsageError(
          absl::StrFormat("--seconds: must be in [1, 3600] for live, got %g", seconds));
    }
    options.length = absl::Seconds(seconds);
  }
  options.seed = absl::GetFlag(FLAGS_seed);
  const std::vector<goodput::Period> schedule = goodput::LiveSchedule(options.length, options.seed);
  const std::vector<goodput::Policy> policies = goodput::StandardPolicies();
  absl::StatusOr<std::vector<goodput::Metrics>> results =
      goodput::RunLive(schedule, policies, options);
  if (!results.ok()) {
    std::fprintf(stderr, "goodput_experiment: live: %s\n",
                 std::string(results.status().message()).c_str());
    return 1;
  }
  goodput::SetWasteRatios(*results, 0);
  std::printf("live: %zu periods (healthy 2-8 s, down 1-4 s), %.0f s, %d callers x %d calls/s "
              "per policy, %s per call on the server, real clock\n",
              schedule.size(), absl::ToDoubleSeconds(options.length), options.callers,
              options.calls_per_second, absl::FormatDuration(options.latency).c_str());
  std::printf("%-22s %9s %9s %9s %9s %8s %8s %9s %9s %9s\n", "policy", "offered", "succeeded",
              "rejected", "oracle", "goodput", "waste", "first_ok", "rec99", "rec99_max");
  std::string json = "{\"live\": {";
  for (size_t p = 0; p < policies.size(); ++p) {
    const goodput::Metrics& m = (*results)[p];
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

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (absl::GetFlag(FLAGS_probe_bound)) return RunProbeBoundMode();
  if (absl::GetFlag(FLAGS_suite)) return RunSuiteMode();
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "simulated" && mode != "grpc" && mode != "live") {
    return example_cli::UsageError(
        absl::StrCat("--mode: must be simulated, grpc or live, got \"", mode, "\""));
  }
  if (mode == "live") return RunLiveMode();
  double seconds = absl::GetFlag(FLAGS_seconds);
  if (seconds == 0) seconds = mode == "grpc" ? 60 : 300;
  if (!(seconds >= 1 && seconds <= 86400)) {
    return example_cli::UsageError(
        absl::StrFormat("--seconds: must be in [1, 86400], got %g", seconds));
  }
  const absl::Duration length = absl::Seconds(seconds);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const std::vector<std::pair<std::string, std::vector<goodput::Period>>> schedules = {
      {"outage", goodput::OutageSchedule(length, seed)},
      {"mixed", goodput::MixedSchedule(length, seed)},
  };
  const std::vector<goodput::Policy> policies = goodput::StandardPolicies();
  std::string json = "{\"schedules\": {";
  for (size_t s = 0; s < schedules.size(); ++s) {
    const auto& [name, schedule] = schedules[s];
    std::vector<goodput::Metrics> results;
    if (mode == "grpc") {
      absl::StatusOr<std::vector<goodput::Metrics>> r =
          goodput::RunOverGrpc(schedule, length, policies, seed);
      if (!r.ok()) {
        std::fprintf(stderr, "goodput_experiment: schedule %s over gRPC: %s\n", name.c_str(),
                     std::string(r.status().message()).c_str());
        return 1;
      }
      results = *std::move(r);
    } else {
      for (const goodput::Policy& policy : policies) {
        results.push_back(goodput::RunSimulated(schedule, length, policy, seed));
      }
    }
    goodput::SetWasteRatios(results, 0);
    if (!absl::GetFlag(FLAGS_json)) {
      std::printf("schedule %s (%s): %zu periods, %.0f s, 1 call/ms\n", name.c_str(),
                  mode.c_str(), schedule.size(), absl::ToDoubleSeconds(length));
      std::printf("%-22s %9s %9s %9s %9s %9s %9s %8s %8s %9s %9s %9s\n", "policy", "succeeded",
                  "failed", "rejected", "to_failing", "rej_healthy", "oracle", "goodput", "waste",
                  "first_ok", "rec99", "rec99_max");
      for (size_t p = 0; p < policies.size(); ++p) {
        const goodput::Metrics& m = results[p];
        std::printf("%-22s %9ld %9ld %9ld %9ld %9ld %9ld %8.4f %8.4f %8.3fs %8.3fs %8.3fs\n",
                    policies[p].key.c_str(), (long)m.succeeded, (long)m.failed,
                    (long)m.rejected_locally, (long)m.reached_failing_backend,
                    (long)m.rejected_while_healthy, (long)m.oracle_succeeded, m.goodput_ratio,
                    m.waste_ratio, m.first_success_seconds, m.recovery99_seconds,
                    m.recovery99_max_seconds);
      }
      std::printf("\n");
    }
    absl::StrAppend(&json, s ? ", " : "", "\"", name, "\": {\"policies\": {");
    for (size_t p = 0; p < policies.size(); ++p) {
      const goodput::Metrics& m = results[p];
      absl::StrAppendFormat(
          &json,
          "%s\"%s\": {\"offered\": %d, \"succeeded\": %d, \"failed\": %d, "
          "\"rejected_locally\": %d, \"reached_failing_backend\": %d, "
          "\"rejected_while_healthy\": %d, \"oracle_succeeded\": %d, \"goodput_ratio\": %.6f, "
          "\"waste_ratio\": %.6f, \"first_success_seconds\": %.4f, "
          "\"recovery99_seconds\": %.4f, \"recovery99_max_seconds\": %.4f}",
          p ? ", " : "", policies[p].key, m.offered, m.succeeded, m.failed, m.rejected_locally,
          m.reached_failing_backend, m.rejected_while_healthy, m.oracle_succeeded,
          m.goodput_ratio, m.waste_ratio, m.first_success_seconds, m.recovery99_seconds,
          m.recovery99_max_seconds);
    }
    json += "}}";
    if (const std::string dir = absl::GetFlag(FLAGS_out); !dir.empty()) {
      std::ofstream csv(dir + "/" + name + ".csv");
      if (!csv) {
        std::fprintf(stderr, "goodput_experiment: cannot write %s/%s.csv\n", dir.c_str(),
                     name.c_str());
        return 1;
      }
      csv << "second,backend";
      for (const goodput::Policy& p : policies) csv << "," << p.key;
      csv << "\n";
      for (size_t sec = 0; sec < results[0].successes_per_second.size(); ++sec) {
        csv << sec << ","
            << goodput::KindName(goodput::PeriodAt(schedule, absl::Seconds(sec)).kind);
        for (const goodput::Metrics& m : results) {
          csv << "," << absl::StrFormat("%.4f", static_cast<double>(m.successes_per_second[sec]) /
                                                     std::max(1, m.offered_per_second[sec]));
        }
        csv << "\n";
      }
    }
  }
  json += "}}";
  return WriteJson(json);
}
