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
#include "examples/common/command_line.h"
#include "experiments/goodput/experiment_flags.h"
#include "experiments/goodput/experiment_modes.h"
#include "experiments/goodput/goodput.h"
#include "experiments/goodput/grpc_run.h"

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
ABSL_FLAG(std::string, rates, kSuiteRates, "Suite: comma-separated calls per second.");
ABSL_FLAG(int, seeds, 3, "Suite: seeds 1..N per family and rate.");
ABSL_FLAG(std::string, export_fates, "",
          "Suite: instead of running, write the per-call fates of every scenario (and the "
          "reference runs of none and recommended) as JSON into this directory, for "
          "experiments/peers/.");
ABSL_FLAG(std::string, extra_policies, "",
          "Suite: more policies, NAME=BREAKER_JSON separated by ';' (BREAKER_JSON is a policy "
          "file's \"breaker\" object), e.g. 'fast={\"threeState\": {\"consecutiveFailures\": 5}}'.");
ABSL_FLAG(std::string, recovery_probe, "",
          "Suite: also run recommended with breaker.recoveryProbe at this interval (e.g. "
          "\"0.25s\"), as \"recommended+probes\": health probes on the simulated clock, "
          "SERVING iff the backend is not down then.");
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

using goodput::RunLiveMode;
using goodput::RunProbeBoundMode;
using goodput::RunSuiteMode;
using goodput::WriteJson;

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
      std::printf("%-22s %9s %9s %9s %9s %9s %9s %8s %8s %9s %9s %9s%s\n", "policy", "succeeded",
                  "failed", "rejected", "to_failing", "rej_healthy", "oracle", "goodput", "waste",
                  "first_ok", "rec99", "rec99_max", mode == "grpc" ? "     stale  answered" : "");
      for (size_t p = 0; p < policies.size(); ++p) {
        const goodput::Metrics& m = results[p];
        std::printf("%-22s %9ld %9ld %9ld %9ld %9ld %9ld %8.4f %8.4f %8.3fs %8.3fs %8.3fs",
                    policies[p].key.c_str(), (long)m.succeeded, (long)m.failed,
                    (long)m.rejected_locally, (long)m.reached_failing_backend,
                    (long)m.rejected_while_healthy, (long)m.oracle_succeeded, m.goodput_ratio,
                    m.waste_ratio, m.first_success_seconds, m.recovery99_seconds,
                    m.recovery99_max_seconds);
        // gRPC mode: the calls Get's fallback answered from the client's
        // copy, and the share answered at all, fresh or stale.
        if (mode == "grpc") {
          std::printf(" %9ld %8.4f", (long)m.answered_stale,
                      static_cast<double>(m.succeeded + m.answered_stale) /
                          std::max<int64_t>(1, m.offered));
        }
        std::printf("\n");
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
          "\"recovery99_seconds\": %.4f, \"recovery99_max_seconds\": %.4f, "
          "\"answered_stale\": %d}",
          p ? ", " : "", policies[p].key, m.offered, m.succeeded, m.failed, m.rejected_locally,
          m.reached_failing_backend, m.rejected_while_healthy, m.oracle_succeeded,
          m.goodput_ratio, m.waste_ratio, m.first_success_seconds, m.recovery99_seconds,
          m.recovery99_max_seconds, m.answered_stale);
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
