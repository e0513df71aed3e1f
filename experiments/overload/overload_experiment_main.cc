// overload_experiment: issue 19's comparison of server-side concurrency
// limits (none, fixed, adaptive) while capacity and load change (see
// experiments/overload/overload.h).
//
//   overload_experiment [--mode=simulated|grpc] [--seed=1] [--phase_seconds=N] [--json]
//                       [--json_file=PATH] [--scenario=phases|criticality|tenants]
//
// --scenario=criticality: 3x capacity, 20% CRITICAL and 80% SHEDDABLE, figures
// per class (criticality_mix.h); --phase_seconds is then the run's length.
// --scenario=tenants: one tenant at 10x its fair share among nine at 0.8x,
// figures per tenant (tenant_mix.h; simulated only).
//
// --mode=simulated (default): 16 workers x 16 ms on a simulated clock, 4 s
// phases, well under a second of real time. --mode=grpc: real servers and
// channels on loopback, 8 workers x 20 ms, 2 s phases (about 2.5 minutes).
// Prints a table (or JSON with --json): one row per phase and policy, then
// the goodput of each policy over the whole run. --help prints the flags and
// exits 0; bad flags exit 2 with one line.

#include <cstdio>
#include <fstream>
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
#include "experiments/overload/grpc_run.h"
#include "experiments/overload/overload.h"
#include "experiments/overload/tenant_mix.h"

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
          "tenant at 10x its share among nine: figures per tenant, docs/per-caller-limits.md).");
ABSL_FLAG(std::string, json_file, "", "Also write the JSON into this file.");

constexpr char kUsage[] =
    "Server-side concurrency limits against a backend whose capacity changes.\n\n"
    "  overload_experiment [--mode=simulated|grpc] [--seed=1] [--phase_seconds=N] [--json]\n"
    "                      [--json_file=PATH]\n\n"
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

// --scenario=tenants: the per-tenant figures (tenant_mix.h), simulated.
int RunTenants(const std::string& mode) {
  if (mode != "simulated") {
    return example_cli::UsageError("--scenario=tenants: only --mode=simulated is implemented");
  }
  overload::TenantConfig config;
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::GetFlag(FLAGS_phase_seconds) > 0) {
    config.duration = absl::Seconds(absl::GetFlag(FLAGS_phase_seconds));
  }
  absl::StatusOr<overload::TenantMixResult> result =
      overload::RunTenantsSimulated(config, overload::TenantPolicies(config));
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::TenantsToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str() : overload::TenantsToTable(*result).c_str(),
             stdout);
  const std::string title = absl::StrFormat(
      "One tenant at %gx its share among %d (simulated, %d workers x %s, deadline %s, seed %d): "
      "goodput OK within deadline",
      config.noisy_load, config.tenants, config.workers, absl::FormatDuration(config.service_time),
      absl::FormatDuration(config.deadline), config.seed);
  return WriteFile(absl::GetFlag(FLAGS_json_file), json) &&
                 WriteFile(absl::GetFlag(FLAGS_svg_file), overload::TenantsToSvg(*result, title))
             ? 0
             : 1;
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
  if (scenario == "criticality") return RunCriticality(mode);
  if (scenario == "tenants") return RunTenants(mode);
  if (scenario != "phases") {
    return example_cli::UsageError(absl::StrCat(
        "--scenario: must be phases, criticality or tenants, got \"", scenario, "\""));
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
