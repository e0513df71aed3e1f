// File: experiments/fleet/fleet_experiment_main.cc
//
// The fleet simulator's command line (issue 33; scripts/fleet.sh runs it):
//   --mode=sweep   every trigger x configuration x load: the table, the
//                  metastability boundary, JSON, and SVG charts (goodput over
//                  time at --chart_load, recovered-or-not per load);
//   --mode=single  one run (--trigger, --policies' first, --load): its table
//                  line and time series.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "examples/common/command_line.h"
#include "experiments/fleet/fleet_report.h"
#include "experiments/fleet/fleet_simulator.h"
#include "experiments/fleet/fleet_svg.h"

ABSL_FLAG(std::string, mode, "sweep", "sweep or single.");
ABSL_FLAG(int, clients, 1000, "Clients.");
ABSL_FLAG(int, servers, 10, "Servers.");
ABSL_FLAG(int, workers, 8, "Workers per server.");
ABSL_FLAG(double, service_ms, 10, "Mean service time, ms.");
ABSL_FLAG(double, warmup_s, 10, "Seconds before the trigger.");
ABSL_FLAG(double, after_s, 40, "Seconds run after the trigger's end.");
ABSL_FLAG(double, bin_s, 0.5, "Width of the time series' bins, seconds.");
ABSL_FLAG(uint64_t, seed, 1, "Seed.");
ABSL_FLAG(std::string, loads, "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", "Offered loads, x capacity.");
ABSL_FLAG(double, load, 0.5, "single: the offered load.");
ABSL_FLAG(std::string, triggers, "latency_spike,capacity_half,outage,cold_cache",
          "Triggers (none, latency_spike, capacity_half, outage, cold_cache).");
ABSL_FLAG(std::string, trigger, "outage", "single: the trigger.");
ABSL_FLAG(std::string, policies, "",
          "Configurations (none, naive, grpc-throttled, recommended, recommended+pushback, "
          "recommended+adaptive); empty: all.");
ABSL_FLAG(double, chart_load, 0.5, "sweep: the load whose goodput over time is charted.");
ABSL_FLAG(std::string, out_dir, "", "sweep: write fleet.txt, fleet.json and the SVGs here.");

namespace {

constexpr char kUsage[] =
    "The fleet simulator: retry storms and metastable failure on simulated time.\n\n"
    "  fleet_experiment [--mode=sweep|single] [--clients=1000] [--servers=10] [--loads=...]\n"
    "                   [--triggers=...] [--policies=...] [--out_dir=DIR]\n\n"
    "Exit status: 0 ok, 1 a run failed, 2 bad usage.";

bool ParseTrigger(const std::string& name, fleet::Trigger* out) {
  for (const fleet::Trigger& t : fleet::StandardTriggers()) {
    if (fleet::TriggerName(t.kind) == name) {
      *out = t;
      return true;
    }
  }
  if (name == "none") {
    *out = fleet::Trigger{};
    return true;
  }
  return false;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "sweep" && mode != "single") {
    return example_cli::UsageError(absl::StrCat("--mode: must be sweep or single, got \"", mode, "\""));
  }
  fleet::Config base;
  base.clients = absl::GetFlag(FLAGS_clients);
  base.servers = absl::GetFlag(FLAGS_servers);
  base.workers = absl::GetFlag(FLAGS_workers);
  base.service_time = absl::Milliseconds(absl::GetFlag(FLAGS_service_ms));
  base.warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_s));
  base.after = absl::Seconds(absl::GetFlag(FLAGS_after_s));
  base.bin = absl::Seconds(absl::GetFlag(FLAGS_bin_s));
  base.seed = absl::GetFlag(FLAGS_seed);
  base.load = absl::GetFlag(FLAGS_load);
  if (absl::Status s = fleet::Validate(base); !s.ok()) return example_cli::UsageError(s.message());

  std::vector<fleet::FleetPolicy> policies;
  const std::vector<std::string> wanted =
      absl::StrSplit(absl::GetFlag(FLAGS_policies), ',', absl::SkipEmpty());
  if (wanted.empty()) {
    absl::StatusOr<std::vector<fleet::FleetPolicy>> all = fleet::StandardPolicies();
    if (!all.ok()) return example_cli::UsageError(all.status().message());
    policies = *std::move(all);
  }
  for (const std::string& name : wanted) {
    absl::StatusOr<fleet::FleetPolicy> p = fleet::StandardPolicy(name);
    if (!p.ok()) return example_cli::UsageError(absl::StrCat("--policies: ", p.status().message()));
    policies.push_back(*std::move(p));
  }

  std::vector<fleet::Trigger> triggers;
  std::vector<double> loads;
  if (mode == "single") {
    fleet::Trigger t;
    if (!ParseTrigger(absl::GetFlag(FLAGS_trigger), &t)) {
      return example_cli::UsageError(absl::StrCat("--trigger: unknown \"", absl::GetFlag(FLAGS_trigger), "\""));
    }
    triggers.push_back(t);
    loads.push_back(base.load);
  } else {
    for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_triggers), ',', absl::SkipEmpty())) {
      fleet::Trigger t;
      if (!ParseTrigger(std::string(name), &t)) {
        return example_cli::UsageError(absl::StrCat("--triggers: unknown \"", name, "\""));
      }
      triggers.push_back(t);
    }
    for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_loads), ',', absl::SkipEmpty())) {
      double v;
      if (!absl::SimpleAtod(s, &v) || !(v > 0)) {
        return example_cli::UsageError(absl::StrCat("--loads: not a positive number: \"", s, "\""));
      }
      loads.push_back(v);
    }
  }

  std::vector<fleet::RunResult> runs;
  double wall = 0;
  for (const fleet::Trigger& t : triggers) {
    for (const fleet::FleetPolicy& p : policies) {
      for (double load : loads) {
        fleet::Config c = base;
        c.trigger = t;
        c.load = load;
        absl::StatusOr<fleet::RunResult> r = fleet::Simulate(c, p);
        if (!r.ok()) {
          std::fprintf(stderr, "fleet_experiment: %s\n", r.status().ToString().c_str());
          return 1;
        }
        wall += r->wall_seconds;
        runs.push_back(*std::move(r));
      }
    }
  }
  std::string text = fleet::ToTable(runs);
  if (mode == "sweep") {
    absl::StrAppend(&text, "\nMetastability boundary (loads up to 0.9 C):\n",
                    fleet::BoundaryTable(runs, 0.9));
  } else {
    std::vector<const fleet::RunResult*> one = {&runs[0]};
    absl::StrAppend(&text, "\n", fleet::SeriesCsv(one));
  }
  int64_t events = 0;
  for (const fleet::RunResult& r : runs) events += r.events;
  absl::StrAppend(&text, "\n", runs.size(), " runs, ", base.clients, " clients x ", base.servers,
                  " servers, capacity ", fleet::Capacity(base), " calls/s; ", events,
                  " events in ", absl::StrFormat("%.1f", wall), " s of real time.\n");
  std::fputs(text.c_str(), stdout);
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  if (mode == "sweep" && !dir.empty()) {
    bool ok = WriteFile(dir + "/fleet.txt", text) && WriteFile(dir + "/fleet.json", fleet::ToJson(runs));
    for (const fleet::Trigger& t : triggers) {
      const std::string name = fleet::TriggerName(t.kind);
      ok = ok && WriteFile(absl::StrCat(dir, "/fleet_goodput_", name, ".svg"),
                           fleet::GoodputSvg(runs, name, absl::GetFlag(FLAGS_chart_load)));
    }
    ok = ok && WriteFile(dir + "/fleet_boundary.svg", fleet::BoundarySvg(runs));
    if (!ok) {
      std::fprintf(stderr, "fleet_experiment: cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
