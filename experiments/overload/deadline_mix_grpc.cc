#include "experiments/overload/deadline_mix_grpc.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "experiments/overload/open_loop_sender.h"
#include "experiments/overload/overload.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

// One run of `policy` at `load` x C for `duration`, `short_fraction` of the
// calls with the short deadline.
absl::StatusOr<DeadlineMixRun> RunOne(const DeadlineMixConfig& c, const Policy& policy,
                                      double load, double short_fraction,
                                      absl::Duration duration) {
  Mutex mu;
  DeadlineMixRun run;
  run.policy = policy.name;
  run.throttle_json = policy.throttle_json;
  std::vector<double> admitted_ms;
  const auto send = [&](OpenLoopSender& sender) {
    resilience::SplitMixRandom arrivals(c.seed);
    resilience::SplitMixRandom kinds(c.seed ^ 0x5851f42d4c957f2dULL);
    const double rate = load * c.workers / absl::ToDoubleSeconds(c.service_time);
    const absl::Time start = absl::Now() + absl::Milliseconds(50);
    const absl::Time end = start + duration;
    absl::Time next = start;
    while (true) {
      next += absl::Seconds(-std::log(1.0 - arrivals.NextUniform()) / rate);
      if (next >= end) break;
      const bool is_short = kinds.NextUniform() < short_fraction;
      const bool first_second = next - start < absl::Seconds(1);
      {
        MutexLock lock(&mu);
        ++run.offered;
        if (is_short) ++run.short_offered;
      }
      sender.SendAt(
          next, is_short ? c.short_deadline : c.long_deadline, [](grpc::ClientContext&) {},
          [&, is_short, first_second](const grpc::Status& status, absl::Duration latency) {
            MutexLock lock(&mu);
            if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
                absl::StrContains(status.error_message(), "deadline-aware admission")) {
              ++run.refused_deadline;
              if (is_short) ++run.refused_deadline_short;
              return;
            }
            if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
              ++run.rejected_limit;
              return;
            }
            ++run.admitted;
            admitted_ms.push_back(absl::ToDoubleMilliseconds(latency));
            if (is_short) {
              ++run.admitted_short;
              if (first_second) ++run.admitted_short_first_second;
            }
            if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
              ++run.admitted_deadline_exceeded;
            }
            if (status.ok() &&
                latency <= (is_short ? c.short_deadline : c.long_deadline)) {
              ++run.ok_in_deadline;
            }
          });
    }
  };
  absl::StatusOr<int64_t> unsent =
      SendToGuardedBackend(policy, c.workers, c.service_time, c.long_deadline, c.seed, send);
  if (!unsent.ok()) return unsent.status();
  MutexLock lock(&mu);
  run.unsent = *unsent;
  run.goodput_per_second = run.ok_in_deadline / absl::ToDoubleSeconds(duration);
  run.admitted_p50_ms = Percentile(admitted_ms, 0.5);
  run.admitted_p99_ms = Percentile(admitted_ms, 0.99);
  return run;
}

}  // namespace

absl::StatusOr<DeadlineMixResult> RunDeadlineMixGrpc(const DeadlineMixConfig& c) {
  DeadlineMixResult result;
  result.config = c;
  result.capacity_per_second = c.workers / absl::ToDoubleSeconds(c.service_time);
  const std::string limit = absl::StrCat(R"("maxConcurrency": )", c.workers);
  const std::string deadline = R"("deadlineAdmission": {"percentile": 0.9, "maxShare": 0.2})";
  const std::vector<Policy> policies = {
      {"limit", absl::StrCat("{", limit, "}")},
      {"limit+deadline", absl::StrCat("{", limit, ", ", deadline, "}")},
      {"deadline_only", absl::StrCat("{", deadline, "}")},
  };
  absl::StatusOr<DeadlineMixRun> unloaded =
      RunOne(c, policies[0], c.unloaded_load, 0, c.unloaded_duration);
  if (!unloaded.ok()) return unloaded.status();
  result.unloaded_p99_ms = unloaded->admitted_p99_ms;
  for (const Policy& policy : policies) {
    absl::StatusOr<DeadlineMixRun> run = RunOne(c, policy, c.load, c.short_fraction, c.duration);
    if (!run.ok()) return run.status();
    result.runs.push_back(*std::move(run));
  }
  return result;
}

std::string DeadlineMixToTable(const DeadlineMixResult& r) {
  const DeadlineMixConfig& c = r.config;
  std::string out = absl::StrFormat(
      "Deadline-aware admission at %gx capacity (C = %d workers / %s = %.0f calls/s), %s, "
      "%.0f%% of calls with a %s deadline (below the service time), the rest %s; seed %d\n"
      "unloaded p99 (limit, %gx C, %s): %.1f ms\n\n",
      c.load, c.workers, absl::FormatDuration(c.service_time), r.capacity_per_second,
      absl::FormatDuration(c.duration), 100 * c.short_fraction,
      absl::FormatDuration(c.short_deadline), absl::FormatDuration(c.long_deadline), c.seed,
      c.unloaded_load, absl::FormatDuration(c.unloaded_duration), r.unloaded_p99_ms);
  absl::StrAppendFormat(&out, "%-15s %7s %6s %8s %8s %8s %9s %9s %8s %9s %8s %8s %6s\n", "policy",
                        "offered", "short", "refused", "rejected", "admitted", "adm_short",
                        "adm_DE_%", "goodput", "goodput_C", "p50_ms", "p99_ms", "unsent");
  for (const DeadlineMixRun& run : r.runs) {
    absl::StrAppendFormat(
        &out, "%-15s %7d %6d %8d %8d %8d %5d/%-3d %9.2f %8.1f %9.2f %8.1f %8.1f %6d\n", run.policy,
        run.offered, run.short_offered, run.refused_deadline, run.rejected_limit, run.admitted,
        run.admitted_short, run.admitted_short_first_second,
        run.admitted > 0 ? 100.0 * run.admitted_deadline_exceeded / run.admitted : 0.0,
        run.goodput_per_second, run.goodput_per_second / r.capacity_per_second,
        run.admitted_p50_ms, run.admitted_p99_ms, run.unsent);
  }
  out +=
      "\nrefused: DEADLINE_EXCEEDED by deadline-aware admission (no handler); rejected: "
      "RESOURCE_EXHAUSTED by the concurrency limit (no handler); adm_short: short-deadline calls "
      "whose handler ran / of them in the first second; adm_DE_%: admitted calls that ended "
      "DEADLINE_EXCEEDED; goodput: OK within the deadline per second, and as a share of C; "
      "p50/p99: client latency of admitted calls.\n";
  return out;
}

std::string DeadlineMixToJson(const DeadlineMixResult& r) {
  const DeadlineMixConfig& c = r.config;
  std::string out = absl::StrFormat(
      R"({"config": {"workers": %d, "service_time_ms": %g, "load": %g, "short_fraction": %g, )"
      R"("short_deadline_ms": %g, "long_deadline_ms": %g, "seconds": %g, "seed": %d}, )"
      R"("capacity_per_second": %g, "unloaded_p99_ms": %.2f, "runs": [)",
      c.workers, absl::ToDoubleMilliseconds(c.service_time), c.load, c.short_fraction,
      absl::ToDoubleMilliseconds(c.short_deadline), absl::ToDoubleMilliseconds(c.long_deadline),
      absl::ToDoubleSeconds(c.duration), c.seed, r.capacity_per_second, r.unloaded_p99_ms);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const DeadlineMixRun& run = r.runs[i];
    absl::StrAppendFormat(
        &out,
        R"(%s{"policy": "%s", "offered": %d, "short_offered": %d, "unsent": %d, )"
        R"("refused_deadline": %d, "refused_deadline_short": %d, "rejected_limit": %d, )"
        R"("admitted": %d, "admitted_short": %d, "admitted_short_first_second": %d, )"
        R"("admitted_deadline_exceeded": %d, "ok_in_deadline": %d, "goodput_per_second": %.1f, )"
        R"("admitted_p50_ms": %.2f, "admitted_p99_ms": %.2f})",
        i == 0 ? "" : ", ", run.policy, run.offered, run.short_offered, run.unsent,
        run.refused_deadline, run.refused_deadline_short, run.rejected_limit, run.admitted,
        run.admitted_short, run.admitted_short_first_second, run.admitted_deadline_exceeded,
        run.ok_in_deadline, run.goodput_per_second, run.admitted_p50_ms, run.admitted_p99_ms);
  }
  out += "]}\n";
  return out;
}

}  // namespace overload
