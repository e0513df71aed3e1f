// File: experiments/fleet/fleet_real_main.cc
//
// The fleet simulator checked against real gRPC (issue 33, item 4;
// scripts/fleet_real.sh runs it): for each configuration, the small case
// simulated with seeds 1..--sim_seeds, then run over real gRPC
// (fleet_grpc_run.h) --repeat times; the table of every run, and the
// comparison: attempts per call from the trigger's start to 10 s after its
// end (amp_win) and recovery time, real against the simulator's mean.
//
//   fleet_real [--clients=30] [--servers=3] [--workers=4] [--service_ms=20]
//              [--load=0.5] [--trigger=capacity_half]
//              [--policies=recommended,naive-budget-1000] [--out_dir=DIR]

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "examples/common/command_line.h"
#include "experiments/fleet/fleet_grpc_run.h"
#include "experiments/fleet/fleet_report.h"
#include "experiments/fleet/fleet_simulator.h"
#include "experiments/fleet/fleet_svg.h"

ABSL_FLAG(int, clients, 30, "Clients (real channels).");
ABSL_FLAG(int, servers, 3, "Servers (in-process, each on its own loopback port).");
ABSL_FLAG(int, workers, 4, "Workers per server.");
ABSL_FLAG(double, service_ms, 20, "Mean service time, ms.");
ABSL_FLAG(double, load, 0.5, "Offered load, x capacity.");
ABSL_FLAG(std::string, trigger, "capacity_half", "none or capacity_half.");
ABSL_FLAG(double, warmup_s, 10, "Seconds before the trigger.");
ABSL_FLAG(double, after_s, 20, "Seconds run after the trigger's end.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the real runs (arrivals, jitter).");
ABSL_FLAG(int, sim_seeds, 5, "The simulator runs seeds 1..N; the comparison takes their mean.");
ABSL_FLAG(int, repeat, 1, "Real runs per configuration (seeds seed, seed+1, ...).");
ABSL_FLAG(std::string, policies, "recommended,naive-budget-1000", "Configurations (fleet_policy.h).");
ABSL_FLAG(std::string, out_dir, "", "Write fleet_real.txt, fleet_real.json, fleet_real_goodput.svg here.");

namespace {

constexpr char kUsage[] =
    "The fleet simulator's small case against real gRPC servers and channels.\n\n"
    "  fleet_real [--clients=30] [--servers=3] [--workers=4] [--service_ms=20] [--load=0.5]\n"
    "             [--trigger=capacity_half] [--policies=...] [--repeat=1] [--out_dir=DIR]\n\n"
    "Exit status: 0 ok, 1 a run failed, 2 bad usage.";

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  f >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

// |a - b| / b, or "-" when either did not recover or b is 0.
std::string RelDiff(double a, double b) {
  if (a < 0 || b < 0) return "-";
  if (b == 0) return a == 0 ? "0%" : "inf";
  return absl::StrFormat("%.0f%%", 100 * std::abs(a - b) / b);
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  fleet::Config base;
  base.clients = absl::GetFlag(FLAGS_clients);
  base.servers = absl::GetFlag(FLAGS_servers);
  base.workers = absl::GetFlag(FLAGS_workers);
  base.service_time = absl::Milliseconds(absl::GetFlag(FLAGS_service_ms));
  base.load = absl::GetFlag(FLAGS_load);
  base.warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_s));
  base.after = absl::Seconds(absl::GetFlag(FLAGS_after_s));
  const std::string trigger = absl::GetFlag(FLAGS_trigger);
  if (trigger == "capacity_half") {
    base.trigger = fleet::Trigger{fleet::TriggerKind::kCapacityHalf, absl::Seconds(10)};
  } else if (trigger != "none") {
    return example_cli::UsageError(
        absl::StrCat("--trigger: must be none or capacity_half, got \"", trigger, "\""));
  }
  if (absl::Status s = fleet::Validate(base); !s.ok()) return example_cli::UsageError(s.message());
  const int sim_seeds = absl::GetFlag(FLAGS_sim_seeds);
  const int repeat = absl::GetFlag(FLAGS_repeat);
  if (sim_seeds < 1 || repeat < 1) {
    return example_cli::UsageError("--sim_seeds and --repeat: must be >= 1");
  }
  std::vector<fleet::FleetPolicy> policies;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_policies), ',', absl::SkipEmpty())) {
    absl::StatusOr<fleet::FleetPolicy> p = fleet::StandardPolicy(std::string(name));
    if (!p.ok()) return example_cli::UsageError(absl::StrCat("--policies: ", p.status().message()));
    policies.push_back(*std::move(p));
  }

  std::vector<fleet::RunResult> runs;
  std::string notes;
  std::string comparison = absl::StrFormat("%-22s %-6s %8s %8s %9s %10s %8s\n", "policy", "side",
                                           "amp_trig", "amp_win", "recovery", "diff_amp", "diff_rec");
  for (const fleet::FleetPolicy& p : policies) {
    double sim_amp = 0, sim_trig = 0, sim_rec = 0;
    bool sim_all_recovered = true;
    for (int s = 1; s <= sim_seeds; ++s) {
      fleet::Config c = base;
      c.seed = static_cast<uint64_t>(s);
      absl::StatusOr<fleet::RunResult> r = fleet::Simulate(c, p);
      if (!r.ok()) {
        std::fprintf(stderr, "fleet_real: %s\n", r.status().ToString().c_str());
        return 1;
      }
      sim_amp += r->window_amplification / sim_seeds;
      sim_trig += r->trigger_amplification / sim_seeds;
      sim_rec += r->recovery_seconds / sim_seeds;
      sim_all_recovered = sim_all_recovered && r->recovered;
      r->policy = absl::StrCat(p.name, "/sim", s);
      runs.push_back(*std::move(r));
    }
    if (!sim_all_recovered) sim_rec = -1;
    absl::StrAppendFormat(&comparison, "%-22s %-6s %8.3f %8.3f %9s %10s %8s\n", p.name, "sim",
                          sim_trig, sim_amp,
                          sim_rec < 0 ? std::string("NEVER") : absl::StrFormat("%.2f s", sim_rec),
                          "", "");
    for (int k = 0; k < repeat; ++k) {
      fleet::Config c = base;
      c.seed = absl::GetFlag(FLAGS_seed) + static_cast<uint64_t>(k);
      const std::string load_before = LoadAverage();
      absl::StatusOr<fleet::GrpcRun> g = fleet::RunOverGrpc(c, p);
      if (!g.ok()) {
        std::fprintf(stderr, "fleet_real: %s\n", g.status().ToString().c_str());
        return 1;
      }
      fleet::RunResult& r = g->result;
      absl::StrAppendFormat(&notes,
                            "%s gRPC seed %d: load average before %s, after %s; %d arrivals sent "
                            ">20 ms late, worst %.1f ms; call latency before the trigger p50 "
                            "%.1f ms, p99 %.1f ms\n",
                            p.name, c.seed, load_before, LoadAverage(), g->late_arrivals,
                            g->max_lateness_ms, g->baseline_p50_ms, g->baseline_p99_ms);
      const double rec = r.recovered ? r.recovery_seconds : -1;
      absl::StrAppendFormat(&comparison, "%-22s %-6s %8.3f %8.3f %9s %10s %8s\n", p.name,
                            absl::StrCat("grpc", c.seed), r.trigger_amplification,
                            r.window_amplification,
                            rec < 0 ? std::string("NEVER") : absl::StrFormat("%.2f s", rec),
                            RelDiff(r.window_amplification, sim_amp), RelDiff(rec, sim_rec));
      r.policy = absl::StrCat(p.name, "/grpc", c.seed);
      runs.push_back(std::move(r));
    }
  }
  const std::string text = absl::StrCat(
      base.clients, " clients x ", base.servers, " servers x ", base.workers, " workers, service ",
      absl::FormatDuration(base.service_time), ", C = ", fleet::Capacity(base), " calls/s, load ",
      base.load, " C, trigger ", trigger, "\n\n", fleet::ToTable(runs), "\nComparison (sim: mean of ",
      sim_seeds, " seeds; diff: |gRPC - sim| / sim):\n", comparison, "\n", notes);
  std::fputs(text.c_str(), stdout);
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  if (!dir.empty()) {
    std::ofstream(dir + "/fleet_real.txt") << text;
    std::ofstream(dir + "/fleet_real.json") << fleet::ToJson(runs);
    // The chart: each configuration's first simulated and first real run.
    std::vector<fleet::RunResult> charted;
    for (const fleet::RunResult& r : runs) {
      if (absl::EndsWith(r.policy, "/sim1") ||
          absl::EndsWith(r.policy, absl::StrCat("/grpc", absl::GetFlag(FLAGS_seed)))) {
        charted.push_back(r);
      }
    }
    std::ofstream f(dir + "/fleet_real_goodput.svg");
    f << fleet::GoodputSvg(charted, trigger, base.load);
    if (!f) {
      std::fprintf(stderr, "fleet_real: cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
