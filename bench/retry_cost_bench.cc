// What the client chain's retry costs the client, with the server in a
// process of its own (spawned here: examples/cache_service/cache_server), so
// that getrusage(RUSAGE_SELF) measures the client alone. Unary Get, closed
// loop, configurations interleaved round by round in one run:
//
//  1. Success path, for each --callers count: a bare channel (gRPC retries
//     off), gRPC's built-in retry (service config), the hijack floors (an
//     interceptor that re-issues each call once: a new completion queue per
//     attempt, or one per caller thread), our breaker, breaker + timeout,
//     and the full chain (retry + timeout + breaker); a bare channel with
//     gRPC's retry filter on (bare_retry_filter, gRPC's default), the floor
//     of any interceptor (passthrough_floor: one that only calls Proceed()),
//     a bulkhead alone and the full chain with a bulkhead. Per config: calls/s,
//     client CPU per call (the headline), context switches per call,
//     p50 / p99, and the ratios to bare, builtin_retry and
//     hijack_floor_reused_cq.
//  2. Failures, at the largest --callers count: the server aborts
//     --failure_rate of the Gets with UNAVAILABLE; builtin_retry, the retry
//     floors (re-issue an UNAVAILABLE attempt at once, up to 3 attempts, a
//     queue per attempt or per caller thread), our retryPolicy alone (no
//     perAttemptTimeout, timeout or breaker), the full chain. CPU per
//     *successful* call, success ratio, p99, ratios to builtin_retry and
//     retry_floor_reused_cq.
//  3. Rejections, at the largest --callers count: what a call costs that an
//     open breaker rejects locally, with the breaker alone and under the
//     full chain, against a real failed round trip (bare channel, a server
//     failing every Get).
// Phases 1 and 2 run again for an async caller (a CompletionQueue per
// caller thread: AsyncGet + Finish + Next) and a callback caller
// (stub->async()->Get), each config named async_... or callback_...: bare,
// the non-blocking hijack floors (attempts on gRPC's callback threads,
// ..._callback_api, or on a queue with a thread of its own,
// ..._own_cq_thread; hijack_once_interceptor.h) and the full chain, plus
// builtin_retry under failures.
//
// Ratios are medians of per-round ratios (both configs measured in the same
// round), with their min and max. --only=CONFIG --calls=N runs N calls of one
// success-path config (with --only_failing: a failure config against a
// failing server) from one caller, the loop between callgrind's
// START/STOP_INSTRUMENTATION markers when <valgrind/callgrind.h> was found
// at build time: bench/run_retry_cost_bench.sh counts instructions per call
// with it.
//
//   retry_cost_bench [--server=PATH] [--callers=4,16] [--seconds=2] [--rounds=5]
//                    [--failure_rate=0.2] [--json_file=PATH]
//   retry_cost_bench --only=CONFIG [--only_failing] [--calls=3000] [--warmup_calls=200]
//                    [--timeout_scale=1]
//
// The pieces: retry_cost_server.h (the server process), retry_cost_channels.h
// (the configurations), retry_cost_load.h (callers and rounds),
// retry_cost_report.h (tables and JSON), retry_cost_phases.h (the three
// comparisons).
//
// --help prints the flags and exits 0; a bad flag exits 2 with one line; a
// server that cannot be started, or a check that fails, exits 1.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/retry_cost_channels.h"
#include "bench/retry_cost_load.h"
#include "bench/retry_cost_phases.h"
#include "bench/retry_cost_report.h"
#include "bench/retry_cost_server.h"
#include "examples/common/command_line.h"

// The instruction count of --only's loop. Without the header the markers
// compile to nothing and --only still runs (and reports CPU per call).
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define RETRY_COST_BENCH_CALLGRIND 1
#else
#define RETRY_COST_BENCH_CALLGRIND 0
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define RUNNING_ON_VALGRIND 0
#endif

ABSL_FLAG(std::string, server, "",
          "The cache_server binary; default: examples/cache_service/cache_server of the build "
          "tree this binary is in.");
ABSL_FLAG(std::vector<std::string>, callers, std::vector<std::string>({"4", "16"}),
          "Closed-loop caller counts of the success-path comparison, comma-separated; the "
          "failure and rejection comparisons use the largest.");
ABSL_FLAG(double, seconds, 2, "Length of each round of each configuration.");
ABSL_FLAG(int, rounds, 5, "Rounds per configuration (interleaved).");
ABSL_FLAG(double, failure_rate, 0.2,
          "Share of Gets the server aborts with UNAVAILABLE in the failure comparison.");
ABSL_FLAG(std::string, json_file, "", "Also write the figures as JSON to this file.");
ABSL_FLAG(std::string, only, "",
          "Run only this success-path config (bare, builtin_retry, hijack_floor, "
          "hijack_floor_reused_cq, breaker, breaker_timeout, full_chain, bare_retry_filter, "
          "passthrough_floor, bulkhead, full_chain_bulkhead) for --calls calls from "
          "one caller, e.g. under callgrind.");
ABSL_FLAG(bool, only_failing, false,
          "--only runs a failure-comparison config (builtin_retry, retry_floor, "
          "retry_floor_reused_cq, retry_only, full_chain) against a server that aborts "
          "--failure_rate of the Gets.");
ABSL_FLAG(int64_t, calls, 3000, "Calls of --only's measured loop.");
ABSL_FLAG(int, timeout_scale, 1,
          "Multiplies the Gets' deadline and the policies' timeout and perAttemptTimeout "
          "(not the backoffs): under callgrind, so that a stall ends no attempt.");
ABSL_FLAG(int64_t, warmup_calls, 200, "Calls of --only before the measured loop.");
ABSL_FLAG(int, replicas, 1,
          "Servers behind --only's channel: above 1 the target lists them all "
          "(ipv4:127.0.0.1:P1,...) and the channel balances round_robin (docs/replicas.md).");

namespace retry_cost {
namespace {

// ---------------------------------------------------------------------------
// --only: one configuration, one caller, a fixed number of calls.

absl::Status RunOnly(const Environment& env, absl::string_view name, int64_t warmup_calls,
                     int64_t calls) {
  // --only_failing: a failure-comparison config, against a server that
  // aborts --failure_rate of the Gets.
  const bool failing = absl::GetFlag(FLAGS_only_failing);
  const double abort_fraction = failing ? absl::GetFlag(FLAGS_failure_rate) : 0;
  std::optional<ChannelSpec> spec;
  for (const ChannelSpec& s : failing ? AllFailureSpecs() : AllSuccessSpecs()) {
    if (s.name == name) spec = s;
  }
  if (!spec) return absl::InvalidArgumentError(absl::StrCat("no config ", name));
  const int replicas = absl::GetFlag(FLAGS_replicas);
  if (replicas < 1 || replicas > 16) {
    return absl::InvalidArgumentError(absl::StrCat("--replicas: must be in [1, 16], got ", replicas));
  }
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<std::string> ports;
  for (int i = 0; i < replicas; ++i) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        StartServer(env, absl::StrCat(failing ? "failing" : "ok", i), abort_fraction);
    if (!server.ok()) return server.status();
    const std::string& address = (*server)->address();
    ports.push_back(address.substr(address.rfind(':') + 1));
    servers.push_back(*std::move(server));
  }
  // One server: its address as before; several: all of them, round_robin.
  const std::string target =
      replicas == 1 ? servers[0]->address()
                    : absl::StrCat("ipv4:127.0.0.1:", absl::StrJoin(ports, ",127.0.0.1:"));
  absl::StatusOr<Client> client = MakeClient(*spec, target, replicas > 1);
  if (!client.ok()) return client.status();
  Stub& stub = *client->stub;
  const std::vector<std::string>& keys = Keys();
  for (int64_t i = 0; i < warmup_calls; ++i) GetOnce(stub, keys[i % keys.size()], client->caller);

  int64_t ok = 0;
  int64_t rejected = 0;
  const ProcessCounters before = ReadProcessCounters();
  const absl::Time begin = absl::Now();
  // Under callgrind --instr-atstart=no only this loop is instrumented: the
  // set-up above (and gRPC's start-up) runs uninstrumented and uncounted.
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
  for (int64_t i = 0; i < calls; ++i) {
    const Outcome outcome = GetOnce(stub, keys[i % keys.size()], client->caller);
    if (outcome == Outcome::kOk) ++ok;
    if (outcome == Outcome::kRejectedLocally) ++rejected;
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  const absl::Duration elapsed = absl::Now() - begin;
  const ProcessCounters after = ReadProcessCounters();

  const double cpu_us = 1e6 * (after.cpu_seconds - before.cpu_seconds);
  std::printf(
      "only=%s failure_rate=%g calls=%lld ok=%lld cpu_us_per_call=%.2f cpu_us_per_ok_call=%.2f "
      "wall_us_per_call=%.2f callgrind_markers=%s under_valgrind=%s replicas=%d\n",
      spec->name.c_str(), abort_fraction, static_cast<long long>(calls),
      static_cast<long long>(ok), cpu_us / calls, ok > 0 ? cpu_us / ok : 0.0,
      absl::ToDoubleMicroseconds(elapsed) / calls, RETRY_COST_BENCH_CALLGRIND ? "yes" : "no",
      RUNNING_ON_VALGRIND ? "yes" : "no", replicas);
  if (rejected > 0) {
    return absl::InternalError(
        absl::StrCat(rejected, " of ", calls, " calls were rejected by the breaker"));
  }
  // Under failures a call fails only when all its attempts did (0.8% at
  // 20% with 3 attempts): more than twice that share means something else.
  const double failed_share = static_cast<double>(calls - ok) / calls;
  const double expected_share = failing ? abort_fraction * abort_fraction * abort_fraction : 0;
  if (failed_share > 2 * expected_share + (failing ? 0.005 : 0)) {
    return absl::InternalError(absl::StrCat(calls - ok, " of ", calls, " calls failed"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The command line.

constexpr char kUsage[] =
    "What the client chain's retry costs the client, server in its own process (spawned\n"
    "cache_server): unary Get, closed-loop callers, configurations interleaved round by\n"
    "round. Success path (bare, builtin_retry, hijack_floor, hijack_floor_reused_cq, breaker,\n"
    "breaker_timeout, full_chain) for each --callers count; failures (--failure_rate of Gets\n"
    "aborted UNAVAILABLE: builtin_retry, retry_floor, retry_floor_reused_cq, retry_only,\n"
    "full_chain) and local rejections of an open breaker against\n"
    "a failed round trip, both at the largest --callers count. The success path and the\n"
    "failures again for async and callback callers (async_..., callback_...). Client CPU\n"
    "per call from getrusage, ratios to bare and builtin_retry (median and range of\n"
    "per-round ratios).\n\n"
    "  retry_cost_bench [--server=PATH] [--callers=4,16] [--seconds=2] [--rounds=5]\n"
    "                   [--failure_rate=0.2] [--json_file=PATH]\n"
    "  retry_cost_bench --only=CONFIG [--only_failing] [--calls=3000] [--warmup_calls=200]\n"
    "                   [--timeout_scale=1]\n\n"
    "--only runs one success-path config (--only_failing: one failure config against a\n"
    "failing server) from one caller, the measured loop between\n"
    "callgrind markers (valgrind --tool=callgrind --instr-atstart=no); see\n"
    "bench/run_retry_cost_bench.sh.";

// The --callers values, or a usage error message.
absl::StatusOr<std::vector<int>> ParseCallers() {
  std::vector<int> callers;
  for (const std::string& s : absl::GetFlag(FLAGS_callers)) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1 || n > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("--callers: each must be an integer in [1, 1024], got \"", s, "\""));
    }
    callers.push_back(n);
  }
  if (callers.empty()) return absl::InvalidArgumentError("--callers: must list at least one");
  return callers;
}

// A message for the first flag out of range; "" when all are fine.
std::string CheckFlags() {
  if (const double s = absl::GetFlag(FLAGS_seconds); !(s > 0 && s <= 3600)) {
    return absl::StrCat("--seconds: must be in (0, 3600], got ", s);
  }
  if (const int r = absl::GetFlag(FLAGS_rounds); r < 1 || r > 1000) {
    return absl::StrCat("--rounds: must be in [1, 1000], got ", r);
  }
  if (const double f = absl::GetFlag(FLAGS_failure_rate); !(f > 0 && f < 1)) {
    return absl::StrCat("--failure_rate: must be in (0, 1), got ", f);
  }
  if (const int64_t c = absl::GetFlag(FLAGS_calls); c < 1) {
    return absl::StrCat("--calls: must be >= 1, got ", c);
  }
  if (const int t = absl::GetFlag(FLAGS_timeout_scale); t < 1 || t > 100) {
    return absl::StrCat("--timeout_scale: must be in [1, 100], got ", t);
  }
  if (const int64_t w = absl::GetFlag(FLAGS_warmup_calls); w < 0) {
    return absl::StrCat("--warmup_calls: must be >= 0, got ", w);
  }
  if (const std::string only = absl::GetFlag(FLAGS_only); !only.empty()) {
    const bool failing = absl::GetFlag(FLAGS_only_failing);
    std::vector<std::string> names;
    for (const ChannelSpec& s : failing ? AllFailureSpecs() : AllSuccessSpecs()) {
      names.push_back(s.name);
    }
    if (std::find(names.begin(), names.end(), only) == names.end()) {
      return absl::StrCat("--only", failing ? " (with --only_failing)" : "", ": must be one of ",
                          absl::StrJoin(names, ", "), "; got \"", only, "\"");
    }
  }
  if (absl::StatusOr<std::vector<int>> c = ParseCallers(); !c.ok()) {
    return std::string(c.status().message());
  }
  return "";
}

// Prints a phase as soon as it is done (a long run shows progress) and keeps
// it for the JSON.
absl::Status PrintAndKeep(absl::StatusOr<Phase> phase, std::vector<Phase>& phases) {
  if (!phase.ok()) return phase.status();
  PrintPhase(*phase);
  std::fflush(stdout);
  phases.push_back(*std::move(phase));
  return absl::OkStatus();
}

absl::Status RunAll(const Environment& env) {
  const std::vector<int> callers = *ParseCallers();
  LoadSettings load;
  load.round_length = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  load.rounds = absl::GetFlag(FLAGS_rounds);
  const double failure_rate = absl::GetFlag(FLAGS_failure_rate);
  std::printf(
      "client CPU = this process's user+sys (getrusage) per call; the server is a\n"
      "separate process. Ratios: median [min, max] of per-round ratios.\n");
  std::vector<Phase> phases;
  const CallerKind kinds[] = {CallerKind::kSync, CallerKind::kAsync, CallerKind::kCallback};
  for (CallerKind kind : kinds) {
    for (int n : callers) {
      load.callers = n;
      if (absl::Status s = PrintAndKeep(RunSuccessPhase(env, load, kind), phases); !s.ok()) {
        return s;
      }
    }
  }
  // Failures and rejections at one caller count, which keeps the default
  // run within a few minutes: the largest, since the failure comparison is
  // held to a few hundred calls/s per caller by the retries' backoff, and at
  // such low rates a call's CPU depends a lot on how the scheduler wakes
  // threads (4 callers gave CPU ratios that changed direction between runs).
  load.callers = *std::max_element(callers.begin(), callers.end());
  for (CallerKind kind : kinds) {
    if (absl::Status s = PrintAndKeep(RunFailurePhase(env, load, failure_rate, kind), phases);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = PrintAndKeep(RunRejectionPhase(env, load), phases); !s.ok()) return s;
  std::fflush(stdout);
  if (const std::string path = absl::GetFlag(FLAGS_json_file); !path.empty()) {
    if (absl::Status s = WriteJson(path, load, failure_rate, phases); !s.ok()) return s;
  }
  for (const Phase& p : phases) {
    for (const std::string& note : p.notes) {
      if (absl::StartsWith(note, "CHECK FAILED")) {
        return absl::InternalError("a check failed (see the notes above)");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

int Main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (const std::string error = CheckFlags(); !error.empty()) {
    return example_cli::UsageError(error);
  }
  absl::StatusOr<TempDir> temp_dir = TempDir::Create();
  if (!temp_dir.ok()) {
    std::fprintf(stderr, "%s: %s\n", example_cli::ProgramName().c_str(),
                 temp_dir.status().ToString().c_str());
    return 1;
  }
  SetTimeoutScale(absl::GetFlag(FLAGS_timeout_scale));
  Environment env;
  env.server_binary = absl::GetFlag(FLAGS_server);
  if (env.server_binary.empty()) env.server_binary = DefaultServerPath();
  env.temp_dir = &*temp_dir;

  const std::string only = absl::GetFlag(FLAGS_only);
  const absl::Status status = only.empty() ? RunAll(env)
                                           : RunOnly(env, only, absl::GetFlag(FLAGS_warmup_calls),
                                                     absl::GetFlag(FLAGS_calls));
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", example_cli::ProgramName().c_str(),
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace retry_cost

int main(int argc, char** argv) { return retry_cost::Main(argc, argv); }
