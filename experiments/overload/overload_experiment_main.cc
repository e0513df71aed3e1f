// overload_experiment: issue 19's comparison of server-side concurrency
// limits (none, fixed, adaptive) while capacity and load change (see
// experiments/overload/overload.h).
//
//   overload_experiment [--mode=simulated|grpc] [--seed=1] [--phase_seconds=N] [--json]
//                       [--json_file=PATH] [--scenario=phases|criticality|tenants|deadline]
//                       [--repeat=N] [--out_prefix=PREFIX]
//
// --scenario=criticality: 3x capacity, 20% CRITICAL and 80% SHEDDABLE, figures
// per class (criticality_mix.h); --phase_seconds is then the run's length.
// --scenario=tenants: one tenant at 10x its fair share among nine at 0.8x,
// figures per tenant (tenant_mix.h). With --mode=grpc (8 workers x 40 ms,
// 5 s per run, about 35 s a repetition) it runs 3 times (--repeat) and,
// unless files are named, writes docs/results/tenants_grpc.{txt,json,svg}
// (run from the repository's root).
//
// --scenario=deadline (--mode=grpc only): 3x capacity, 15% of calls with a
// deadline below the service time, a fixed limit with and without
// throttle.deadlineAdmission (deadline_mix_grpc.h); --phase_seconds is the
// length of each run.
//
// --mode=simulated (default): 16 workers x 16 ms on a simulated clock, 4 s
// phases, well under a second of real time. --mode=grpc: real servers and
// channels on loopback, 8 workers x 20 ms, 2 s phases (about 2.5 minutes).
// Prints a table (or JSON with --json): one row per phase and policy, then
// the goodput of each policy over the whole run. --help prints the flags and
// exits 0; bad flags exit 2 with one line.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "examples/common/command_line.h"
#include "experiments/overload/criticality_mix.h"
#include "experiments/overload/criticality_mix_grpc.h"
#include "experiments/overload/deadline_mix_grpc.h"
#include "experiments/overload/grpc_run.h"
#include "experiments/overload/overload.h"
#include "experiments/overload/retry_storm_grpc.h"
#include "experiments/overload/tenant_mix.h"
#include "experiments/overload/tenant_mix_grpc.h"

ABSL_FLAG(uint64_t, seed, 1, "Seed of the arrivals and service times.");
ABSL_FLAG(double, phase_seconds, 0,
          "Length of each (load, capacity) phase, in seconds; 0 = 4 (simulated), 2 (grpc).");
ABSL_FLAG(std::string, mode, "simulated",
          "simulated (a simulated backend and clock) or grpc (real servers and channels).");
ABSL_FLAG(std::string, policies, "",
          "Comma-separated policy names to run (none, fixed_right, fixed_2x_high, fixed_2x_low, "
          "adaptive, adaptive_aimd); empty: all.");
ABSL_FLAG(std::string, csv_file, "",
          "Also write the goodput of each policy per phase into this CSV file.");
ABSL_FLAG(bool, json, false, "Print JSON instead of a table.");
ABSL_FLAG(std::string, svg_file, "",
          "--scenario=criticality or tenants: also draw the chart into this SVG file.");
ABSL_FLAG(std::string, scenario, "phases",
          "phases (the limits while capacity and load change), criticality (3x capacity, 20% "
          "CRITICAL and 80% SHEDDABLE: figures per class, docs/criticality.md) or tenants (one "
          "tenant at 10x its share among nine: figures per tenant, docs/per-caller-limits.md) or "
          "retries (gRPC only: naive retrying clients at 2x capacity against servers with and "
          "without throttle.retryShedding, docs/criticality.md) or "
          "deadline (--mode=grpc: 3x capacity, mixed deadlines, with and without "
          "throttle.deadlineAdmission).");
ABSL_FLAG(std::string, json_file, "", "Also write the JSON into this file.");
ABSL_FLAG(std::string, out_prefix, "",
          "--scenario=tenants: also write the table, JSON and chart into PREFIX.txt, .json and "
          ".svg. With --mode=grpc and no file named, docs/results/tenants_grpc.");
ABSL_FLAG(int, repeat, 0,
          "--scenario=tenants --mode=grpc: run the whole scenario this many times, each run in "
          "the output with the machine's load averages; 0 = 3.");

constexpr char kUsage[] =
    "Server-side concurrency limits against a backend whose capacity changes.\n\n"
    "  overload_experiment [--mode=simulated|grpc] [--seed=1] [--phase_seconds=N] [--json]\n"
    "                      [--json_file=PATH] [--scenario=phases|criticality|tenants|deadline]\n"
    "                      [--repeat=N] [--out_prefix=PREFIX]\n\n"
    "Exit status: 0 ok, 1 a run failed, 2 bad usage.";

// Writes `text` to `path` (nothing for an empty path); false on failure.
bool WriteFile(const std::string& path, const std::string& text) {
  if (path.empty()) return true;
  std::ofstream out(path);
  out << text;
  if (out) return true;
  std::fprintf(stderr, "overload_experiment: cannot write %s\n", path.c_str());
  return false;
}

// --scenario=criticality: the per-class figures (criticality_mix.h).
int RunCriticality(const std::string& mode) {
  overload::MixConfig config =
      mode == "grpc" ? overload::MixGrpcDefaults() : overload::MixConfig();
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::GetFlag(FLAGS_phase_seconds) > 0) {
    config.duration = absl::Seconds(absl::GetFlag(FLAGS_phase_seconds));
  }
  absl::StatusOr<overload::MixResult> result =
      mode == "grpc" ? overload::RunMixGrpc(config, overload::MixPolicies(config))
                     : overload::RunMixSimulated(config, overload::MixPolicies(config));
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::MixToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str() : overload::MixToTable(*result).c_str(),
             stdout);
  const std::string title = absl::StrFormat(
      "Criticality at %gx capacity (%s, %d workers x %s, deadline %s, seed %d): OK within "
      "deadline per class",
      config.load, mode, config.workers, absl::FormatDuration(config.service_time),
      absl::FormatDuration(config.deadline), config.seed);
  return WriteFile(absl::GetFlag(FLAGS_json_file), json) &&
                 WriteFile(absl::GetFlag(FLAGS_svg_file), overload::MixToSvg(*result, title))
             ? 0
             : 1;
}

// --scenario=retries (gRPC only): naive retrying clients at 2x capacity
// against servers with and without retry shedding (retry_storm_grpc.h);
// --phase_seconds is each run's length (10 s by default).
int RunRetries(const std::string& mode) {
  if (mode != "grpc") return example_cli::UsageError("--scenario=retries: needs --mode=grpc");
  overload::RetryStormConfig config;
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::GetFlag(FLAGS_phase_seconds) > 0) {
    config.duration = absl::Seconds(absl::GetFlag(FLAGS_phase_seconds));
  }
  absl::StatusOr<overload::RetryStormResult> result =
      overload::RunRetryStorm(config, overload::RetryStormServers(config));
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::RetryStormToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str()
                                       : overload::RetryStormToTable(*result).c_str(),
             stdout);
  return WriteFile(absl::GetFlag(FLAGS_json_file), json) ? 0 : 1;
}

// Where --scenario=tenants --mode=grpc writes its table, JSON and chart
// when no file is named: the repository's results, run from its root.
constexpr char kTenantsGrpcPrefix[] = "docs/results/tenants_grpc";

// --scenario=tenants: the per-tenant figures (tenant_mix.h), simulated or
// over real gRPC (tenant_mix_grpc.h), the latter --repeat times.
int RunTenants(const std::string& mode) {
  const bool grpc = mode == "grpc";
  overload::TenantConfig config = grpc ? overload::TenantGrpcDefaults() : overload::TenantConfig();
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::GetFlag(FLAGS_phase_seconds) > 0) {
    config.duration = absl::Seconds(absl::GetFlag(FLAGS_phase_seconds));
  }
  int repeat = absl::GetFlag(FLAGS_repeat);
  if (repeat == 0) repeat = grpc ? 3 : 1;
  if (repeat < 1 || repeat > 20 || (!grpc && repeat != 1)) {
    return example_cli::UsageError(absl::StrFormat(
        "--repeat: must be in [1, 20] with --mode=grpc and 1 in simulated mode (a seeded run "
        "repeats itself), got %d",
        repeat));
  }
  std::string txt_file, json_file = absl::GetFlag(FLAGS_json_file),
                        svg_file = absl::GetFlag(FLAGS_svg_file);
  std::string prefix = absl::GetFlag(FLAGS_out_prefix);
  if (!prefix.empty() && !(json_file.empty() && svg_file.empty())) {
    return example_cli::UsageError(absl::StrCat(
        "--out_prefix=", prefix, " names the JSON and chart files itself: drop --json_file and "
        "--svg_file, or --out_prefix"));
  }
  if (grpc && prefix.empty() && json_file.empty() && svg_file.empty()) {
    prefix = kTenantsGrpcPrefix;
  }
  if (const std::filesystem::path dir = std::filesystem::path(prefix).parent_path();
      !prefix.empty() && !dir.empty() && !std::filesystem::is_directory(dir)) {
    std::fprintf(stderr,
                 "overload_experiment: cannot write %s.{txt,json,svg}: no directory %s here (run "
                 "from the repository's root, or name the files with --out_prefix)\n",
                 prefix.c_str(), dir.string().c_str());
    return 1;
  }
  if (!prefix.empty()) {
    txt_file = absl::StrCat(prefix, ".txt");
    json_file = absl::StrCat(prefix, ".json");
    svg_file = absl::StrCat(prefix, ".svg");
  }
  std::vector<overload::TenantMixResult> repeats;
  for (int i = 1; i <= repeat; ++i) {
    if (repeat > 1) std::fprintf(stderr, "overload_experiment: run %d of %d\n", i, repeat);
    absl::StatusOr<overload::TenantMixResult> result =
        grpc ? overload::RunTenantsGrpc(config, overload::TenantPolicies(config))
             : overload::RunTenantsSimulated(config, overload::TenantPolicies(config));
    if (!result.ok()) {
      std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
      return 1;
    }
    repeats.push_back(*std::move(result));
  }
  // Over real gRPC, the simulated mode at the same scale, to compare with.
  std::optional<overload::TenantMixResult> simulated;
  if (grpc) {
    absl::StatusOr<overload::TenantMixResult> result =
        overload::RunTenantsSimulated(config, overload::TenantPolicies(config));
    if (!result.ok()) {
      std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
      return 1;
    }
    simulated = *std::move(result);
  }
  const overload::TenantMixResult* reference = simulated ? &*simulated : nullptr;
  const std::string json = overload::TenantRepeatsToJson(repeats, reference);
  const std::string table = overload::TenantRepeatsToTable(repeats, reference);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str() : table.c_str(), stdout);
  const std::string title = absl::StrFormat(
      "One tenant at %gx its share among %d (%s, %d workers x %s, deadline %s, seed %d%s): "
      "goodput OK within deadline",
      config.noisy_load, config.tenants, mode, config.workers,
      absl::FormatDuration(config.service_time), absl::FormatDuration(config.deadline),
      config.seed, repeat > 1 ? absl::StrCat(", ", repeat, " runs") : "");
  const bool written = WriteFile(txt_file, table) && WriteFile(json_file, json) &&
                       WriteFile(svg_file, overload::TenantRepeatsToSvg(repeats, title));
  if (written && !prefix.empty()) {
    std::fprintf(stderr, "overload_experiment: wrote %s.{txt,json,svg}\n", prefix.c_str());
  }
  return written ? 0 : 1;
}

// --scenario=deadline: deadline-aware admission at 3x capacity with mixed
// deadlines, over real gRPC only (deadline_mix_grpc.h).
int RunDeadline(const std::string& mode) {
  if (mode != "grpc") return example_cli::UsageError("--scenario=deadline: needs --mode=grpc");
  overload::DeadlineMixConfig config;
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::GetFlag(FLAGS_phase_seconds) > 0) {
    config.duration = absl::Seconds(absl::GetFlag(FLAGS_phase_seconds));
  }
  absl::StatusOr<overload::DeadlineMixResult> result = overload::RunDeadlineMixGrpc(config);
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::DeadlineMixToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str()
                                       : overload::DeadlineMixToTable(*result).c_str(),
             stdout);
  return WriteFile(absl::GetFlag(FLAGS_json_file), json) ? 0 : 1;
}

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "simulated" && mode != "grpc") {
    return example_cli::UsageError(
        absl::StrCat("--mode: must be simulated or grpc, got \"", mode, "\""));
  }
  double seconds = absl::GetFlag(FLAGS_phase_seconds);
  if (seconds == 0) seconds = mode == "grpc" ? 2 : 4;
  if (!(seconds >= 1 && seconds <= 3600)) {
    return example_cli::UsageError(
        absl::StrFormat("--phase_seconds: must be in [1, 3600], got %g", seconds));
  }
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  if (scenario != "tenants" &&
      (absl::GetFlag(FLAGS_repeat) != 0 || !absl::GetFlag(FLAGS_out_prefix).empty())) {
    return example_cli::UsageError(
        absl::StrCat("--repeat and --out_prefix: only with --scenario=tenants, got --scenario=",
                     scenario));
  }
  if (scenario == "criticality") return RunCriticality(mode);
  if (scenario == "tenants") return RunTenants(mode);
  if (scenario == "retries") return RunRetries(mode);
  if (scenario == "deadline") return RunDeadline(mode);
  if (scenario != "phases") {
    return example_cli::UsageError(absl::StrCat(
        "--scenario: must be phases, criticality, tenants, retries or deadline, got \"", scenario,
        "\""));
  }
  overload::Config config = mode == "grpc" ? overload::GrpcDefaults() : overload::Config();
  config.seed = absl::GetFlag(FLAGS_seed);
  config.phase_length = absl::Seconds(seconds);
  std::vector<overload::Policy> policies;
  const std::vector<std::string> wanted =
      absl::StrSplit(absl::GetFlag(FLAGS_policies), ',', absl::SkipEmpty());
  for (const overload::Policy& p : overload::DefaultPolicies(config)) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), p.name) != wanted.end()) {
      policies.push_back(p);
    }
  }
  if (policies.empty()) return example_cli::UsageError("--policies: names no policy");
  absl::StatusOr<overload::Result> result = mode == "grpc"
                                                ? overload::RunGrpc(config, policies)
                                                : overload::RunSimulated(config, policies);
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::ToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str() : overload::ToTable(*result).c_str(),
             stdout);
  for (const auto& [path, text] :
       {std::pair{absl::GetFlag(FLAGS_json_file), json},
        std::pair{absl::GetFlag(FLAGS_csv_file), overload::ToCsv(*result)}}) {
    if (path.empty()) continue;
    std::ofstream out(path);
    out << text;
    if (!out) {
      std::fprintf(stderr, "overload_experiment: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
