// CallTimers on a SimulatedClock: a retried call's backoff and hedging
// timers wait until the test moves the clock past them.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SIMULATED_CALL_TIMERS_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SIMULATED_CALL_TIMERS_H_

#include <algorithm>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "src/client_interceptors/call_timers.h"
#include "src/core/mutex.h"
#include "src/core/simulated_clock.h"

namespace resilience::testing {

class SimulatedCallTimers final : public CallTimers {
 public:
  explicit SimulatedCallTimers(SimulatedClock& clock) : clock_(clock) {}

  void Set(grpc::Alarm* alarm, grpc::CompletionQueue* cq, absl::Time at, void* tag) override {
    MutexLock lock(&mu_);
    pending_.push_back({alarm, cq, at, tag});
  }

  void Cancel(grpc::Alarm* alarm) override {
    std::vector<Pending> taken = Take([alarm](const Pending& p) { return p.alarm == alarm; });
    for (const Pending& p : taken) FireNow(p);
    alarm->Cancel();
  }

  // The timers set and not yet fired, as delays from the simulated now,
  // once there are `n` of them (waits up to 10 s of real time; fewer when
  // it gave up).
  std::vector<absl::Duration> AwaitPending(size_t n) {
    const absl::Time until = absl::Now() + absl::Seconds(10);
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (pending_.size() >= n || absl::Now() > until) {
          std::vector<absl::Duration> delays;
          for (const Pending& p : pending_) delays.push_back(p.at - clock_.WallNow());
          return delays;
        }
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  // Moves the clock by `d` (rounded up to whole nanoseconds, the clock's
  // resolution) and fires the timers then due.
  void Advance(absl::Duration d) {
    clock_.AdvanceTime(absl::Ceil(d, absl::Nanoseconds(1)));
    const absl::Time now = clock_.WallNow();
    for (const Pending& p : Take([now](const Pending& p) { return p.at <= now; })) FireNow(p);
  }

 private:
  struct Pending {
    grpc::Alarm* alarm;
    grpc::CompletionQueue* cq;
    absl::Time at;
    void* tag;
  };

  template <typename Pred>
  std::vector<Pending> Take(Pred pred) {
    MutexLock lock(&mu_);
    std::vector<Pending> taken;
    auto it = std::stable_partition(pending_.begin(), pending_.end(),
                                    [&](const Pending& p) { return !pred(p); });
    taken.assign(it, pending_.end());
    pending_.erase(it, pending_.end());
    return taken;
  }

  // Outside the lock: the alarm's event may run on another thread at once.
  static void FireNow(const Pending& p) { p.alarm->Set(p.cq, absl::ToChronoTime(absl::Now()), p.tag); }

  SimulatedClock& clock_;
  Mutex mu_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SIMULATED_CALL_TIMERS_H_
