#include "experiments/overload/criticality_mix_grpc.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "experiments/overload/open_loop_sender.h"
#include "grpc_resilience/criticality.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

absl::StatusOr<MixRun> RunOne(const MixConfig& c, const Policy& policy, bool honour,
                              int64_t* unsent) {
  Mutex mu;
  MixRun run;
  run.policy = policy.name;
  run.honoured = honour;
  const auto send = [&](OpenLoopSender& sender) {
    resilience::SplitMixRandom arrivals(c.seed);
    resilience::SplitMixRandom classes(c.seed ^ 0x5851f42d4c957f2dULL);
    const double rate = c.load * c.workers / absl::ToDoubleSeconds(c.service_time);
    const absl::Time start = absl::Now() + absl::Milliseconds(50);
    const absl::Time end = start + c.duration;
    absl::Time next = start;
    while (true) {
      next += absl::Seconds(-std::log(1.0 - arrivals.NextUniform()) / rate);
      if (next >= end) break;
      const bool critical = classes.NextUniform() < c.critical_fraction;
      const auto prepare = [&](grpc::ClientContext& context) {
        if (honour && !critical) {
          resilience::SetCriticality(context, resilience::Criticality::kSheddable);
        }
        MutexLock lock(&mu);
        ++(critical ? run.critical : run.sheddable).offered;
      };
      sender.SendAt(next, prepare, [critical, &mu, &run](OpenLoopSender::Answer answer) {
        MutexLock lock(&mu);
        ClassResult& r = critical ? run.critical : run.sheddable;
        ++(answer == OpenLoopSender::Answer::kRejected       ? r.rejected
           : answer == OpenLoopSender::Answer::kOkInDeadline ? r.ok_in_deadline
                                                             : r.late);
      });
    }
  };
  absl::StatusOr<int64_t> not_sent =
      SendToGuardedBackend(policy, c.workers, c.service_time, c.deadline, c.seed, send);
  if (!not_sent.ok()) return not_sent.status();
  *unsent = *not_sent;
  MutexLock lock(&mu);
  run.goodput_per_second = (run.critical.ok_in_deadline + run.sheddable.ok_in_deadline) /
                           absl::ToDoubleSeconds(c.duration);
  return run;
}

}  // namespace

MixConfig MixGrpcDefaults() {
  MixConfig c;
  c.workers = 8;
  c.service_time = absl::Milliseconds(20);
  c.deadline = absl::Milliseconds(60);
  c.duration = absl::Seconds(5);
  return c;
}

absl::StatusOr<MixResult> RunMixGrpc(const MixConfig& config,
                                     const std::vector<Policy>& policies) {
  MixResult result;
  result.config = config;
  for (const Policy& policy : policies) {
    for (const bool honour : {true, false}) {
      int64_t unsent = 0;
      absl::StatusOr<MixRun> run = RunOne(config, policy, honour, &unsent);
      if (!run.ok()) return run.status();
      if (unsent > 0) {
        result.notes.push_back(absl::StrCat(policy.name, honour ? " honoured" : " ignored", ": ",
                                            unsent, " arrivals not sent (the process stalled)"));
      }
      result.runs.push_back(*std::move(run));
    }
  }
  return result;
}

}  // namespace overload
