// overload_experiment: issue 19's comparison of server-side concurrency
// limits (none, fixed, adaptive) while capacity and load change (see
// experiments/overload/overload.h).
//
//   overload_experiment [--seed=1] [--phase_seconds=4] [--json] [--json_file=PATH]
//
// Prints a table (or JSON with --json): one row per phase and policy, then
// the goodput of each policy over the whole run. --help prints the flags and
// exits 0; bad flags exit 2 with one line.

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "examples/common/command_line.h"
#include "experiments/overload/overload.h"

ABSL_FLAG(uint64_t, seed, 1, "Seed of the arrivals and service times.");
ABSL_FLAG(double, phase_seconds, 4, "Length of each (load, capacity) phase, in seconds.");
ABSL_FLAG(bool, json, false, "Print JSON instead of a table.");
ABSL_FLAG(std::string, json_file, "", "Also write the JSON into this file.");

constexpr char kUsage[] =
    "Server-side concurrency limits against a backend whose capacity changes.\n\n"
    "  overload_experiment [--seed=1] [--phase_seconds=4] [--json] [--json_file=PATH]\n\n"
    "Exit status: 0 ok, 1 a run failed, 2 bad usage.";

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const double seconds = absl::GetFlag(FLAGS_phase_seconds);
  if (!(seconds >= 1 && seconds <= 3600)) {
    return example_cli::UsageError(
        absl::StrFormat("--phase_seconds: must be in [1, 3600], got %g", seconds));
  }
  overload::Config config;
  config.seed = absl::GetFlag(FLAGS_seed);
  config.phase_length = absl::Seconds(seconds);
  absl::StatusOr<overload::Result> result =
      overload::RunSimulated(config, overload::DefaultPolicies(config));
  if (!result.ok()) {
    std::fprintf(stderr, "overload_experiment: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string json = overload::ToJson(*result);
  std::fputs(absl::GetFlag(FLAGS_json) ? json.c_str() : overload::ToTable(*result).c_str(),
             stdout);
  const std::string path = absl::GetFlag(FLAGS_json_file);
  if (!path.empty()) {
    std::ofstream out(path);
    out << json;
    if (!out) {
      std::fprintf(stderr, "overload_experiment: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
