#include "experiments/overload/tenant_mix_grpc.h"

#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "experiments/overload/open_loop_sender.h"
#include "src/core/mutex.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

// Attempts at one run while the load generator stalls in it.
constexpr int kAttempts = 3;

// The first three fields of /proc/loadavg (1, 5 and 15 minutes), or
// "unknown".
std::string LoadAverages() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return absl::StrCat(one, " ", five, " ", fifteen);
}

// One run: `calls` (the noisy tenant's left out unless `noisy`) against
// `policy`'s throttle; the arrivals not sent in `*unsent`, those that were
// in `*sent`.
absl::StatusOr<TenantRun> RunOne(const TenantConfig& c, const Policy& policy, bool noisy,
                                 const std::vector<TenantCall>& calls, int64_t* unsent,
                                 int64_t* sent) {
  Mutex mu;
  TenantRun run;
  run.tenants.resize(c.tenants);
  std::vector<std::string> keys;
  for (int i = 0; i < c.tenants; ++i) keys.push_back(TenantKey(i));
  *sent = 0;
  const auto send = [&](OpenLoopSender& sender) {
    const absl::Time start = absl::Now() + absl::Milliseconds(50);
    for (const TenantCall& call : calls) {
      if (call.tenant == 0 && !noisy) continue;
      const int tenant = call.tenant;
      const auto prepare = [&](grpc::ClientContext& context) {
        context.AddMetadata(kTenantHeader, keys[tenant]);
        MutexLock lock(&mu);
        ++run.tenants[tenant].offered;
      };
      const bool was_sent = sender.SendAt(
          start + call.arrival, prepare, [tenant, &mu, &run](OpenLoopSender::Answer answer) {
            MutexLock lock(&mu);
            TenantResult& r = run.tenants[tenant];
            ++(answer == OpenLoopSender::Answer::kRejected       ? r.rejected
               : answer == OpenLoopSender::Answer::kOkInDeadline ? r.ok_in_deadline
                                                                 : r.late);
          });
      if (was_sent) ++*sent;
    }
  };
  absl::StatusOr<int64_t> not_sent =
      SendToGuardedBackend(policy, c.workers, c.service_time, c.deadline, c.seed, send);
  if (!not_sent.ok()) return not_sent.status();
  *unsent = *not_sent;
  MutexLock lock(&mu);
  return run;
}

}  // namespace

TenantConfig TenantGrpcDefaults() {
  TenantConfig c;
  c.workers = 8;
  c.service_time = absl::Milliseconds(40);
  c.deadline = absl::Milliseconds(120);
  c.duration = absl::Seconds(5);
  return c;
}

absl::StatusOr<TenantMixResult> RunTenantsGrpc(const TenantConfig& config,
                                               const std::vector<Policy>& policies) {
  if (absl::Status s = ValidateTenantConfig(config); !s.ok()) return s;
  const std::vector<TenantCall> calls = MakeTenantCalls(config);
  std::vector<std::string> notes = {absl::StrCat("load average before: ", LoadAverages())};
  const auto run_one = [&](const Policy& policy, bool noisy) -> absl::StatusOr<TenantRun> {
    const std::string name = absl::StrCat(policy.name, noisy ? " with" : " without",
                                          " the noisy tenant");
    for (int attempt = 1;; ++attempt) {
      int64_t unsent = 0, sent = 0;
      absl::StatusOr<TenantRun> run = RunOne(config, policy, noisy, calls, &unsent, &sent);
      if (!run.ok()) return run.status();
      const bool stalled = unsent > 5 && unsent * 100 > unsent + sent;
      if (!stalled) {
        if (unsent > 0) {
          notes.push_back(absl::StrCat(name, ": ", unsent, " of ", unsent + sent,
                                       " arrivals not sent (the load generator fell behind)"));
        }
        return run;
      }
      const std::string stall = absl::StrCat(unsent, " of ", unsent + sent,
                                             " arrivals not sent, the load generator fell behind");
      if (attempt == kAttempts) {
        notes.push_back(absl::StrCat(name, ": kept a run with a stall (", stall, ") after ",
                                     kAttempts, " attempts"));
        return run;
      }
      notes.push_back(absl::StrCat(name, ": run ", attempt, " discarded (", stall,
                                   "); made again"));
    }
  };
  absl::StatusOr<TenantMixResult> result = RunTenantPolicies(config, policies, run_one);
  if (!result.ok()) return result.status();
  notes.push_back(absl::StrCat("load average after: ", LoadAverages()));
  result->notes = std::move(notes);
  return result;
}

}  // namespace overload
