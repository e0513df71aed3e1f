// File: src/breaker/three_state_breaker.h
//
// The classic Closed / Open / Half-Open circuit breaker (Hystrix, gobreaker,
// resilience4j), over the shared rolling window.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_THREE_STATE_BREAKER_H_
#define GRPC_RESILIENCE_SRC_BREAKER_THREE_STATE_BREAKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "src/core/mutex.h"
#include "absl/time/time.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"
#include "src/breaker/rolling_window.h"

namespace resilience {

// ThreeStateBreaker
//
// The algorithm:
//   Closed: outcomes go to the rolling window. A failure trips the breaker to
//     Open when (a) the window holds >= min_requests completed calls and the
//     failure rate is >= failure_rate_threshold, or (b) consecutive_failures
//     is set and that many failures came in a row, or (c) slow-call rate
//     tripping is set, the window holds >= min_requests calls and the share of
//     slow calls is >= slow_call_rate_threshold. A call slower than
//     slow_call_threshold counts as a failure and as slow.
//   Open: every call is rejected until open_duration has passed; then the
//     next Allow() moves to Half-Open. Each re-open without a full close in
//     between multiplies the open period by open_duration_multiplier, up to
//     max_open_duration; closing resets it.
//   Half-Open: at most half_open_max_probes probes in flight, admitted no
//     closer together than probe_interval. half_open_successes_to_close probe
//     successes close the breaker (with a fresh window); any probe failure
//     re-opens it; a neutral probe only frees its slot. If probes have been in
//     flight for half_open_max_wait without any result, the next Allow()
//     re-opens the breaker. When probe_overdue is set and the newest probe in
//     flight has waited that long, one more probe may go beyond
//     half_open_max_probes (and no closer than probe_interval to the last):
//     a probe stuck on a slow backend then cannot hold every other call back
//     for its whole timeout. A success of any probe closes the breaker; a
//     failure re-opens it, except for a failure of a probe that a newer
//     overdue probe superseded (older news than the probe still in flight):
//     that one only frees its slot when the grown open period is no longer
//     than probe_overdue, and otherwise re-opens with the open period counted
//     from the newest probe's admission, not from the old news' arrival.
//     The first result that closes or re-opens wins; later ones are of an
//     older generation.
//   Generations: every state change bumps the generation; a result reported
//   for an admission of an older generation is ignored.
//   Connection (AllowWithConnection(), the channel's state): a half-open
//   probe on a channel that is not connected could only fail without
//   reaching a server and grow the open period for it. So while the channel
//   is not connected, an Open breaker whose open period is over stays Open
//   and a Half-Open one admits no probe (kAwaitingConnection; the open
//   period does not grow), and an Open breaker that saw the channel not
//   connected goes Half-Open as soon as it is connected again, before its
//   open period ends (cause kReconnected; not while a health answer gates it):
//   the next call is the probe. Allow() is AllowWithConnection() on a
//   channel that is always connected.
//
// Locking: the Closed hot path takes no lock: Allow() loads the state and
// generation atomically, Record() adds to the lock-free window and, on a
// failure only, evaluates the trip conditions; changing state takes `mu_`.
// Open and Half-Open decisions take `mu_` (they are rare by construction).
// The listener is called after `mu_` is released. This class is thread-safe.
class ThreeStateBreaker final : public Breaker {
 public:
  struct Options {
    // Trip when failures / completed calls reaches this, in (0, 1].
    // Defaults to 0.5.
    double failure_rate_threshold = 0.5;
    // Completed calls the window must hold before the rate trips count.
    // >= 1. Defaults to 20 (Hystrix's requestVolumeThreshold).
    int64_t min_requests = 20;
    // Trip after this many failures in a row, whatever the window says;
    // 0 disables. Defaults to 0.
    int64_t consecutive_failures = 0;
    // A call slower than this counts as a failure and as slow; zero disables.
    // Defaults to zero.
    absl::Duration slow_call_threshold = absl::ZeroDuration();
    // Trip when slow calls / completed calls reaches this, in (0, 1]; 0
    // disables. Needs slow_call_threshold. Defaults to 0.
    double slow_call_rate_threshold = 0;
    // Length of the rolling window. Defaults to 10 s.
    absl::Duration window = absl::Seconds(10);
    // Buckets in the window. Defaults to 10.
    int buckets = 10;
    // How long the breaker stays open the first time. > 0. Defaults to 5 s.
    absl::Duration open_duration = absl::Seconds(5);
    // Each re-open from Half-Open multiplies the open period by this; 1 keeps
    // it constant. >= 1. Defaults to 2.
    double open_duration_multiplier = 2.0;
    // Cap of the open period. >= open_duration. Defaults to 60 s.
    absl::Duration max_open_duration = absl::Seconds(60);
    // Probes in flight at once in Half-Open. >= 1. Defaults to 1.
    int half_open_max_probes = 1;
    // Probe successes that close the breaker. >= 1. Defaults to 1.
    int half_open_successes_to_close = 1;
    // Least time between two probe admissions. >= 0. Defaults to 200 ms.
    absl::Duration probe_interval = absl::Milliseconds(200);
    // Probes in flight this long without a result re-open the breaker. > 0.
    // Defaults to 30 s.
    absl::Duration half_open_max_wait = absl::Seconds(30);
    // In Half-Open, once the newest probe in flight has waited this long
    // without a result, one more probe may go; zero disables. >= 0. Defaults
    // to zero.
    absl::Duration probe_overdue = absl::ZeroDuration();
    // Recovery probed by the server's health service (RecoveryProbe): once a
    // health answer is known (OnHealth() with kServing or kNotServing), the
    // open period no longer ends by itself: only a SERVING answer moves Open
    // to Half-Open, so no user call is admitted while the server is known not
    // to serve. Until then, and after kUnknown (no health service), the open
    // period ends as without it. Defaults to false.
    bool health_gated = false;
    // Operating mode. Defaults to kNormal.
    BreakerMode mode = BreakerMode::kNormal;
    // Called on every state change, outside the breaker's lock.
    BreakerListener listener;
  };

  // Create()
  //
  // InvalidArgument naming the field and value for invalid options.
  // `clock` must outlive the breaker.
  static absl::StatusOr<std::unique_ptr<ThreeStateBreaker>> Create(const Options& options,
                                                                  Clock& clock);
  // The rules of Options (three_state_breaker_options.cc).
  static absl::Status Validate(const Options& options);

  Admission Allow() override ABSL_LOCKS_EXCLUDED(mu_);
  Admission AllowWithConnection(Criticality level, absl::FunctionRef<bool()> connected) override
      ABSL_LOCKS_EXCLUDED(mu_);
  BreakerSnapshot Snapshot() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::string_view kind() const override { return "three_state"; }

  // SetMode()
  //
  // Changes the operating mode at run time (e.g. an operator forcing the
  // breaker open). The state machine keeps its state.
  void SetMode(BreakerMode mode) ABSL_LOCKS_EXCLUDED(mu_);
  void Control(BreakerCommand command) override ABSL_LOCKS_EXCLUDED(mu_);
  // The forced mode, and an open or half-open breaker starts open: the open
  // period (the new open_duration) counted from when `previous` opened, a
  // half-open one probing at once (its probes in flight belong to the old).
  void ContinueFrom(const BreakerSnapshot& previous) override ABSL_LOCKS_EXCLUDED(mu_);

  BreakerState state() const {
    return static_cast<BreakerState>(state_.load(std::memory_order_acquire));
  }
  // OnHealth()
  //
  // A health probe's answer (RecoveryProbe calls it; ignored unless
  // options().health_gated and the mode is kNormal):
  //   kServing: Open -> Half-Open at once (the next call is the half-open
  //     probe, whatever probe_interval says); the open period is not waited
  //     out. Closed and Half-Open: nothing.
  //   kNotServing: Closed -> Open (cause kHealthNotServing; the probe was made
  //     after a failure: the failure was the server's, not the call's);
  //     Half-Open -> Open (backing off); Open stays Open, without timer.
  //   kUnknown: the open period ends by itself again (no health service).
  enum class Health { kServing, kNotServing, kUnknown };
  void OnHealth(Health health) ABSL_LOCKS_EXCLUDED(mu_);

  // The open period the next trip from Half-Open would use.
  absl::Duration current_open_duration() ABSL_LOCKS_EXCLUDED(mu_);

  const Options& options() const { return options_; }

 private:
  // Up to two transitions can happen in one call; they are delivered after
  // the lock is released.
  struct Transitions {
    BreakerTransition items[2];
    int size = 0;
    void Add(BreakerState from, BreakerState to, absl::Time at, TransitionCause cause) {
      BreakerTransition& t = items[size++];
      t = BreakerTransition();
      t.from = from;
      t.to = to;
      t.at = at;
      t.cause = cause;
    }
  };
  // Why a closed breaker trips: BreakerTransition's cause and figures.
  struct Trip {
    TransitionCause cause;
    double figure = 0;
    double threshold = 0;
    int64_t calls = 0;
  };

  ThreeStateBreaker(const Options& options, Clock& clock);

  // Allow() and AllowWithConnection(); `connected` is asked only when the
  // mode is kNormal and the breaker is not Closed.
  Admission Decide(absl::FunctionRef<bool()> connected) ABSL_LOCKS_EXCLUDED(mu_);

  void OnRecord(const Admission& admission, Outcome outcome, absl::Duration latency) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void RecordProbe(const Admission& admission, Outcome outcome, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Why the breaker should open now, if it should.
  std::optional<Trip> ShouldTrip(absl::Time now, int64_t consecutive);
  void TripFromClosed(uint64_t generation, absl::Time now, const Trip& trip)
      ABSL_LOCKS_EXCLUDED(mu_);

  void SetState(BreakerState to, absl::Time now, TransitionCause cause, Transitions& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenLocked(absl::Time now, bool backoff, TransitionCause cause, Transitions& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The open period a re-open from Half-Open would use.
  absl::Duration GrownOpenDuration() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Transitions& transitions);

  const Options options_;
  Clock& clock_;
  RollingWindow window_;

  Mutex mu_;
  // Written only under mu_; atomic so that the Closed hot path can read them
  // without it.
  std::atomic<int> state_{static_cast<int>(BreakerState::kClosed)};
  std::atomic<int> mode_;
  std::atomic<uint64_t> generation_{1};
  // Failures in a row while Closed. Atomic: updated on the hot path.
  std::atomic<int64_t> consecutive_failures_{0};

  // When the breaker entered its state (the clock's Now(), in nanoseconds).
  std::atomic<int64_t> state_since_ns_;

  // Whether a health answer (kServing or kNotServing) is known: with
  // health_gated, the open period then ends only by a kServing answer.
  bool health_known_ ABSL_GUARDED_BY(mu_) = false;
  // Since it last opened, the channel was seen not connected.
  bool disconnected_seen_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time open_until_ ABSL_GUARDED_BY(mu_);
  absl::Duration open_duration_ ABSL_GUARDED_BY(mu_);
  int probes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int probe_successes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_probe_admit_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // When the probes now in flight started waiting for a result.
  absl::Time probes_waiting_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Probes admitted before this were superseded by an overdue probe: their
  // failures free their slots but do not re-open the breaker.
  absl::Time superseded_before_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_THREE_STATE_BREAKER_H_
