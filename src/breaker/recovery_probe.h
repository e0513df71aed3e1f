// File: src/breaker/recovery_probe.h
//
// When to ask the server's health service (grpc.health.v1 Check) about a
// three-state breaker's backend, and what its answer does to the breaker:
// the decision half of the policy's `breaker.recoveryProbe`
// (docs/endpoint-breakers.md, "Recovery probed without user calls"). The
// gRPC half (issuing the Check) is glue in src/client_interceptors; this
// class knows no gRPC and is driven by a Clock, so its logic is tested on a
// SimulatedClock.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_RECOVERY_PROBE_H_
#define GRPC_RESILIENCE_SRC_BREAKER_RECOVERY_PROBE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// RecoveryProbe
//
// One per breaker (a method's, or one endpoint's). A probe is wanted
//   - while the breaker is Open: its recovery is learnt from probes, not
//     from user calls (the breaker, made with health_gated, stays Open until
//     a SERVING answer);
//   - after a user call's failure while Closed: a NOT_SERVING (or
//     unreachable) answer trips the breaker at once, so an outage costs one
//     failed call instead of the breaker's whole trip condition.
// Probes go no closer together than `interval`, one at a time. Answers:
//   kServing      the breaker goes Half-Open (from Open): the next user call
//                 confirms, so a server that is up but fails this method
//                 costs one call per probe, not a trip condition's worth;
//   kNotServing   NOT_SERVING / SERVICE_UNKNOWN: Closed and Half-Open -> Open;
//   kUnreachable  the Check itself failed (UNAVAILABLE, its deadline): as
//                 kNotServing (a server that cannot answer a health check
//                 serves nothing either);
//   kUnknown      the server has no health service (UNIMPLEMENTED): the
//                 breaker's open period ends by itself again, as without
//                 probes; the probes go on at `interval` (it may get one).
// Probes are counted here (stats()), never as calls of the breaker's window.
// This class is thread-safe.
class RecoveryProbe {
 public:
  struct Options {
    // The service name asked about (HealthCheckRequest.service); empty: the
    // server as a whole. Defaults to empty.
    std::string health_service;
    // Least time between two probes' starts. In [1ms, 1h]. Defaults to 0.25s.
    absl::Duration interval = absl::Milliseconds(250);
    // A probe's deadline (then kUnreachable). In [1ms, 1h]. Defaults to 1s.
    absl::Duration timeout = absl::Seconds(1);
  };
  enum class Answer { kServing, kNotServing, kUnreachable, kUnknown };

  struct Stats {
    int64_t probes = 0;  // started
    int64_t serving = 0;
    int64_t not_serving = 0;
    int64_t unreachable = 0;
    int64_t unknown = 0;
  };

  // InvalidArgument naming the field and value.
  static absl::Status Validate(const Options& options);

  // `breaker` (made with health_gated) and `clock` must outlive this.
  RecoveryProbe(const Options& options, ThreeStateBreaker& breaker, Clock& clock);

  // OnCallFailed()
  //
  // A user call's failure was recorded on the breaker: a probe is wanted.
  void OnCallFailed() ABSL_LOCKS_EXCLUDED(mu_);

  // StartIfDue()
  //
  // True when a probe should go now (wanted, none in flight, `interval`
  // since the last one started); it then counts as started, and the caller
  // must report its answer with OnAnswer() once.
  bool StartIfDue() ABSL_LOCKS_EXCLUDED(mu_);

  // TimeUntilDue()
  //
  // How long until StartIfDue() may say true, from now: zero when due,
  // InfiniteDuration() when no probe is wanted or one is in flight.
  absl::Duration TimeUntilDue() ABSL_LOCKS_EXCLUDED(mu_);

  // OnAnswer()
  //
  // The answer of the probe StartIfDue() started; applied to the breaker.
  void OnAnswer(Answer answer) ABSL_LOCKS_EXCLUDED(mu_);

  Stats stats() ABSL_LOCKS_EXCLUDED(mu_);
  const Options& options() const { return options_; }

 private:
  bool WantedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  ThreeStateBreaker& breaker_;
  Clock& clock_;

  Mutex mu_;
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  // A user call failed since the last answer.
  bool failure_seen_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_RECOVERY_PROBE_H_
