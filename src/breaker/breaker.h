// File: src/breaker/breaker.h
//
// The circuit-breaker interface shared by both algorithms (SreBreaker and
// ThreeStateBreaker), with its two-step API:
//
//   resilience::Admission admission = breaker.Allow();
//   if (!admission.admitted()) return Reject(admission.reason());
//   ... make the call ...
//   admission.Record(resilience::Outcome::kSuccess, latency);
//
// An Admission that is destroyed without Record() records kNeutral, so a
// half-open probe slot is never leaked by an early return.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_BREAKER_H_
#define GRPC_RESILIENCE_SRC_BREAKER_BREAKER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "grpc_resilience/breaker_state.h"
#include "src/breaker/outcome.h"
#include "src/breaker/rolling_window.h"

namespace resilience {

class Breaker;

enum class RejectReason {
  kNone,                // admitted
  kOpen,                // three-state: open
  kHalfOpenProbeLimit,  // three-state: half-open, all probe slots taken
  kHalfOpenProbeInterval,  // three-state: half-open, next probe not due yet
  kAwaitingConnection,  // three-state: a probe is due, but the channel is not
                        // connected (AllowWithConnection())
  kForcedOpen,          // mode kForceOpen (an operator's force_open)
  kDropped,             // SRE: dropped with the current drop probability
};

absl::string_view RejectReasonName(RejectReason reason);

using BreakerListener = std::function<void(const BreakerTransition&)>;

// Admission
//
// The result of Breaker::Allow(): admitted, or rejected with a reason. An
// admitted Admission must be reported once with Record(); later calls are
// ignored, and destruction without one records kNeutral. Move-only; not
// thread-safe (one call owns it).
class Admission {
 public:
  Admission() = default;
  Admission(Admission&& other) noexcept { *this = std::move(other); }
  Admission& operator=(Admission&& other) noexcept;
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;
  ~Admission();

  bool admitted() const { return reason_ == RejectReason::kNone; }
  RejectReason reason() const { return reason_; }
  // True while an admitted call has not been recorded yet.
  bool pending() const { return breaker_ != nullptr; }
  // Admitted although the breaker rejected it: the caller overrode the
  // rejection (Waived()); nothing is recorded on the breaker for it.
  bool waived() const { return waived_; }

  // Waived()
  //
  // An admission the breaker did not give: a caller that decided to let the
  // call go despite a rejection (per-endpoint breakers, EndpointBreakers)
  // keeps its start time for the latency it reports elsewhere.
  static Admission Waived(absl::Time start) {
    Admission a;
    a.start_ = start;
    a.waived_ = true;
    return a;
  }

  // Record()
  //
  // Reports how the call went and how long it took (from Allow()). A call
  // slower than the breaker's slow_call_threshold counts as a failure.
  void Record(Outcome outcome, absl::Duration latency);

  // For breakers: the generation and start time the admission was made in,
  // and whether it holds a half-open probe slot.
  uint64_t generation() const { return generation_; }
  absl::Time start() const { return start_; }
  bool probe() const { return probe_; }

 private:
  friend class Breaker;

  Breaker* breaker_ = nullptr;  // set while admitted and not yet recorded
  uint64_t generation_ = 0;
  absl::Time start_;
  RejectReason reason_ = RejectReason::kNone;
  bool probe_ = false;
  bool waived_ = false;
};

// Breaker
//
// A circuit breaker for one destination (in grpc-resilience: one channel
// target and method). All implementations must be thread-safe and must not
// allocate on Allow() or Record().
class Breaker {
 public:
  virtual ~Breaker() = default;

  // Allow()
  //
  // Whether a call may go out now. Never blocks.
  virtual Admission Allow() = 0;

  // Allow(level)
  //
  // The same for a call of criticality `level`. A breaker that keeps no
  // statistics per criticality (ThreeStateBreaker) ignores it; SreBreaker
  // keeps them per level, so that the level the backend refuses is the one
  // throttled (docs/criticality.md).
  virtual Admission Allow(Criticality /*level*/) { return Allow(); }

  // AllowWithConnection()
  //
  // Allow(level) for a call on a channel whose connection `connected` tells
  // (true: connected, or idle and free to connect; false: connecting or
  // failing to). A breaker asks it only while it is not Closed, at most
  // once per call. ThreeStateBreaker spends no half-open probe while the
  // channel is not connected, and half-opens once it is connected again
  // (a call that cannot reach a server says nothing of the server); the
  // others ignore it.
  virtual Admission AllowWithConnection(Criticality level,
                                        absl::FunctionRef<bool()> /*connected*/) {
    return Allow(level);
  }

  // Snapshot()
  //
  // The current state and window counts.
  virtual BreakerSnapshot Snapshot() = 0;

  // A short name of the algorithm ("sre", "three_state").
  virtual absl::string_view kind() const = 0;

  // Control()
  //
  // An operator's command (BreakerCommand): force_open and force_closed set
  // the mode, automatic restores the mode the breaker was made with, reset
  // clears the window and closes the breaker (a state change is reported
  // with cause kReset). Thread-safe; calls in flight are recorded as usual.
  virtual void Control(BreakerCommand command) = 0;

  // ContinueFrom()
  //
  // Takes over from `previous`, the snapshot of the breaker of the same
  // algorithm this one replaces (a policy update changed its settings),
  // before any call reached this one: an operator's forced mode stays
  // forced. Transitions none (the method's breaker keeps its state as far
  // as its algorithm can; ThreeStateBreaker also stays open). The window
  // starts empty: its calls were counted under the old settings.
  virtual void ContinueFrom(const BreakerSnapshot& previous);

 protected:
  friend class Admission;

  // Called once per admitted Admission with the outcome the caller reported;
  // implementations apply their own slow-call threshold.
  virtual void OnRecord(const Admission& admission, Outcome outcome,
                        absl::Duration latency) = 0;

  // For implementations: makes an admitted or a rejected Admission.
  Admission Admit(uint64_t generation, absl::Time start, bool probe) {
    Admission a;
    a.breaker_ = this;
    a.generation_ = generation;
    a.start_ = start;
    a.probe_ = probe;
    return a;
  }
  static Admission Reject(RejectReason reason) {
    Admission a;
    a.reason_ = reason;
    return a;
  }

  // When an admitted call ended: its start plus `latency`, so that Record()
  // needs no second clock read; the latency is clamped to [0, window] so
  // that a bogus one cannot move the window into the far future.
  static absl::Time EndOf(const Admission& admission, absl::Duration latency,
                          absl::Duration window) {
    return admission.start() + std::clamp(latency, absl::ZeroDuration(), window);
  }

  // Fills the failure and slow-call rates of `snapshot` from its counts.
  static void SetRates(BreakerSnapshot& snapshot) {
    const int64_t completed = snapshot.counts.completed();
    if (completed == 0) return;
    snapshot.failure_rate = static_cast<double>(snapshot.counts.failure) / completed;
    snapshot.slow_call_rate = static_cast<double>(snapshot.counts.slow) / completed;
  }
};

inline Admission& Admission::operator=(Admission&& other) noexcept {
  if (this != &other) {
    if (pending()) Record(Outcome::kNeutral, absl::ZeroDuration());
    breaker_ = other.breaker_;
    generation_ = other.generation_;
    start_ = other.start_;
    reason_ = other.reason_;
    probe_ = other.probe_;
    waived_ = other.waived_;
    other.breaker_ = nullptr;
  }
  return *this;
}

inline Admission::~Admission() {
  if (pending()) Record(Outcome::kNeutral, absl::ZeroDuration());
}

inline void Admission::Record(Outcome outcome, absl::Duration latency) {
  Breaker* breaker = breaker_;
  if (breaker == nullptr) return;
  breaker_ = nullptr;
  breaker->OnRecord(*this, outcome, latency);
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_BREAKER_H_
