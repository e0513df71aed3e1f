#include "bench/retry_cost_phases.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/retry_cost_channels.h"

namespace retry_cost {

// A server whose Gets fail `abort_fraction` of the time, with the keys
// stored.
absl::StatusOr<std::unique_ptr<ServerProcess>> StartServer(const Environment& env,
                                                           absl::string_view name,
                                                           double abort_fraction) {
  absl::StatusOr<std::string> policy = WriteFaultPolicy(*env.temp_dir, abort_fraction);
  if (!policy.ok()) return policy.status();
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      env.server_binary, *policy, env.temp_dir->File(absl::StrCat("server_", name, ".log")));
  if (!server.ok()) return server.status();
  if (absl::Status s = StoreKeys((*server)->address()); !s.ok()) return s;
  return server;
}

namespace {

const Metric kCpuPerCall = {"cpu_us_per_call", "CPU µs/call", CpuUsPerCall, 1, true};
const std::vector<Metric> kSuccessMetrics = {
    {"calls_per_s", "calls/s", CallsPerSecond, 0, true},
    kCpuPerCall,
    {"context_switches_per_call", "csw/call", SwitchesPerCall, 2, false},
    {"p50_ms", "p50 ms", P50Ms, 3, false},
    {"p99_ms", "p99 ms", P99Ms, 3, false},
};

// On the success path every call must succeed: a note when one did not.
void NoteFailedCalls(Phase& phase) {
  for (const ConfigRounds& c : phase.configs) {
    int64_t failed = 0;
    for (const RoundResult& r : c.rounds) failed += r.calls - r.ok;
    if (failed > 0) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name, ": ", failed,
                                         " calls failed on the success path"));
    }
  }
}


}  // namespace

absl::StatusOr<Phase> RunSuccessPhase(const Environment& env, const LoadSettings& load,
                                      CallerKind caller) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "ok", 0);
  if (!server.ok()) return server.status();
  const bool sync = caller == CallerKind::kSync;
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients(sync ? SuccessPathSpecs() : NonBlockingSuccessSpecs(caller),
                  (*server)->address());
  if (!clients.ok()) return clients.status();
  const std::string prefix = CallerPrefix(caller);
  Phase phase;
  phase.key = absl::StrCat(prefix, "success_", load.callers, "_callers");
  phase.title = absl::StrCat("Success path: Get", sync ? "" : absl::StrCat(" (", prefix, "caller)"),
                             ", ", load.callers,
                             " closed-loop callers, server in its own process, median of ",
                             load.rounds, " interleaved rounds of ",
                             absl::FormatDuration(load.round_length));
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = kSuccessMetrics;
  if (sync) {
    phase.references = {"bare", "builtin_retry", "hijack_floor_reused_cq"};
  } else {
    phase.references = {prefix + "bare", prefix + "hijack_floor_callback_api",
                        prefix + "hijack_floor_own_cq_thread"};
  }
  NoteFailedCalls(phase);
  return phase;
}

absl::StatusOr<Phase> RunFailurePhase(const Environment& env, const LoadSettings& load,
                                      double failure_rate, CallerKind caller) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "failing", failure_rate);
  if (!server.ok()) return server.status();
  const bool sync = caller == CallerKind::kSync;
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients(sync ? FailureSpecs() : NonBlockingFailureSpecs(caller), (*server)->address());
  if (!clients.ok()) return clients.status();
  const std::string prefix = CallerPrefix(caller);
  Phase phase;
  phase.key = prefix + "failure";
  phase.title = absl::StrFormat(
      "Failures%s: the server aborts %.0f%% of Gets with UNAVAILABLE, %d callers, median of %d "
      "interleaved rounds",
      sync ? "" : absl::StrCat(" (", prefix, "caller)"), 100 * failure_rate, load.callers,
      load.rounds);
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = {
      {"cpu_us_per_ok_call", "CPU µs/successful call", CpuUsPerOkCall, 1, true},
      {"success_ratio", "success ratio", SuccessRatio, 4, false},
      {"calls_per_s", "calls/s", CallsPerSecond, 0, true},
      {"p50_ms", "p50 ms", P50Ms, 3, false},
      {"p99_ms", "p99 ms", P99Ms, 3, false},
  };
  if (sync) {
    phase.references = {"builtin_retry", "retry_floor_reused_cq"};
  } else {
    phase.references = {prefix + "builtin_retry", prefix + "retry_floor_callback_api",
                        prefix + "retry_floor_own_cq_thread"};
  }
  for (const ConfigRounds& c : phase.configs) {
    if (c.counters &&
        (c.counters->rejected_by_breaker > 0 || c.counters->retry_budget_exhausted > 0)) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name,
                                         ": calls were rejected by the breaker or not retried "
                                         "for the budget; the comparison is not like for like"));
    }
  }
  return phase;
}

// Sends Gets until `client`'s breaker rejects one locally.
absl::Status TripBreaker(Client& client) {
  for (int i = 0; i < 1000; ++i) {
    if (GetOnce(*client.stub, Keys()[0]) == Outcome::kRejectedLocally) return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat(client.name, ": the breaker did not open after 1000 failed calls"));
}

absl::StatusOr<Phase> RunRejectionPhase(const Environment& env, const LoadSettings& load) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "down", 1.0);
  if (!server.ok()) return server.status();
  ChannelSpec bare = Bare();
  bare.name = "bare_failed_rpc";
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients({OurChain("open_breaker", BreakerOnly(kLatchingBreaker)),
                   OurChain("open_breaker_full_chain", FullChain(kLatchingBreaker)),
                   HijackRejectFloor(), bare},
                  (*server)->address());
  if (!clients.ok()) return clients.status();
  for (Client& c : *clients) {
    if (!c.resilience) continue;
    if (absl::Status s = TripBreaker(c); !s.ok()) return s;
  }
  Phase phase;
  phase.key = "rejection";
  phase.title = absl::StrFormat(
      "Rejections: an open breaker's local rejection vs a real failed round trip (server fails "
      "every Get), %d callers, median of %d interleaved rounds",
      load.callers, load.rounds);
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = {
      kCpuPerCall,
      {"rejected_locally_ratio", "rejected locally", RejectedRatio, 4, false},
      {"calls_per_s", "calls/s", CallsPerSecond, 0, false},
      {"context_switches_per_call", "csw/call", SwitchesPerCall, 3, false},
      {"p99_ms", "p99 ms", P99Ms, 3, false},
  };
  phase.references = {"open_breaker", "bare_failed_rpc"};
  // Every call of the breaker channels must be a local rejection, of the bare
  // one a server failure; a retried rejection would show as retries.
  for (const ConfigRounds& c : phase.configs) {
    int64_t calls = 0, rejected = 0, ok = 0;
    for (const RoundResult& r : c.rounds) {
      calls += r.calls;
      rejected += r.rejected_locally;
      ok += r.ok;
    }
    const bool expect_rejections = c.counters.has_value();
    if (ok > 0 || rejected != (expect_rejections ? calls : 0) ||
        (c.counters && c.counters->retries > 0)) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name, ": ", calls, " calls, ", ok,
                                         " OK, ", rejected, " rejected locally"));
    }
  }
  const ConfigRounds& a = phase.Config("open_breaker");
  const ConfigRounds& b = phase.Config("open_breaker_full_chain");
  const ConfigRounds& c = phase.Config("bare_failed_rpc");
  phase.notes.push_back(absl::StrCat("(b)/(a) full chain rejection / breaker rejection, CPU: ",
                                     FormatRatio(RatioTo(b, a, kCpuPerCall))));
  phase.notes.push_back(absl::StrCat("(a)/(c) breaker rejection / failed round trip, CPU: ",
                                     FormatRatio(RatioTo(a, c, kCpuPerCall))));
  return phase;
}

}  // namespace retry_cost
