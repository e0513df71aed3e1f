/// \file include/grpc_resilience/breaker_state.h
///
/// The words a circuit breaker reports in: its state and mode, why it
/// changed state, and what it looked like then. Plain values, no behaviour:
/// the events (events.h) and the client's stats carry them, and the gRPC-free
/// breaker core (src/breaker) speaks them too, so this header is shared by
/// both sides rather than the public header including the core.

#ifndef GRPC_RESILIENCE_BREAKER_STATE_H_
#define GRPC_RESILIENCE_BREAKER_STATE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// The state a breaker reports. SreBreaker has no states of its own: it is
/// kClosed while its drop probability is 0 and kOpen while it is above 0.
enum class BreakerState {
  kClosed,   ///< calls go through and their outcomes are counted
  kOpen,     ///< calls are rejected locally (SRE: a share of them, its drop probability)
  kHalfOpen  ///< three-state: a few probe calls test whether the backend recovered
};

/// Operating mode (ThreeStateBreaker; SreBreaker is always kNormal).
enum class BreakerMode {
  kNormal,       ///< the state machine decides
  kForceOpen,    ///< reject everything (Hystrix forceOpen)
  kForceClosed,  ///< admit everything, keep counting (Hystrix forceClosed)
  kDisabled,     ///< admit everything, count nothing (resilience4j DISABLED)
  kMetricsOnly,  ///< count and report, never reject or change state (resilience4j)
};

/// Why a breaker changed state.
enum class TransitionCause {
  kFailureRate,          ///< three-state: failure rate reached its threshold
  kConsecutiveFailures,  ///< three-state: that many failures in a row
  kSlowCallRate,         ///< three-state: slow-call rate reached its threshold
  kOpenPeriodEnded,      ///< three-state: open -> half-open
  kProbeFailed,          ///< three-state: a half-open probe failed
  kProbeTimedOut,        ///< three-state: a probe took longer than halfOpenMaxWait
  kProbesSucceeded,      ///< three-state: enough probes succeeded to close
  kDropsStarted,         ///< SRE: the drop probability rose above 0
  kDropsStopped,         ///< SRE: the drop probability fell back to 0
  kReset,                ///< an operator reset the breaker (BreakerCommand::kReset)
  kHealthServing,        ///< three-state with recoveryProbe: open -> half-open, the
                         ///< server's health service answered SERVING
  kHealthNotServing,     ///< three-state with recoveryProbe: a health probe after a
                         ///< failure (or during half-open) found the server not serving
  kReconnected,          ///< three-state: open -> half-open, the channel, not connected
                         ///< while it was open, is connected again
};

/// What an operator can tell a breaker at run time
/// (ClientResilience::ControlBreaker(), the admin endpoint).
enum class BreakerCommand {
  kForceOpen,    ///< reject every call until told otherwise (mode force_open)
  kForceClosed,  ///< admit every call, keep counting (mode force_closed)
  kAutomatic,    ///< back to the mode the policy gave it: the state machine decides
  kReset,        ///< forget the window, close, restart the open period from its
                 ///< first length; the mode is kept
};

/// "closed", "open", "half_open"; "force_open", ...; "failure_rate", ...
///@{
GRPC_RESILIENCE_EXPORT absl::string_view BreakerStateName(BreakerState state);
GRPC_RESILIENCE_EXPORT absl::string_view BreakerModeName(BreakerMode mode);
// What a breaker does with calls, for people: "forced open" or "forced
// closed" while an operator forces it (its state machine's state then
// decides nothing), otherwise BreakerStateName(state).
GRPC_RESILIENCE_EXPORT absl::string_view EffectiveBreakerStateName(BreakerMode mode,
                                                                 BreakerState state);
GRPC_RESILIENCE_EXPORT absl::string_view TransitionCauseName(TransitionCause cause);
///@}
/// "force_open", "force_closed", "automatic", "reset".
GRPC_RESILIENCE_EXPORT absl::string_view BreakerCommandName(BreakerCommand command);
/// The command named `name` (BreakerCommandName's words); nullopt for any
/// other word.
GRPC_RESILIENCE_EXPORT std::optional<BreakerCommand> ParseBreakerCommand(absl::string_view name);

/// What a breaker's rolling window counted (RollingWindow::Counts).
struct GRPC_RESILIENCE_EXPORT BreakerWindowCounts {
  int64_t success = 0;   ///< calls that ended as a success
  int64_t failure = 0;   ///< calls that ended as a failure (a slow success included)
  int64_t rejected = 0;  ///< calls the breaker rejected locally
  int64_t slow = 0;      ///< completed calls slower than the slow-call threshold
  /// Calls that reached the backend and ended with success or failure.
  int64_t completed() const { return success + failure; }
  /// Equal when every count is.
  bool operator==(const BreakerWindowCounts& o) const {
    return success == o.success && failure == o.failure && rejected == o.rejected &&
           slow == o.slow;
  }
};

/// What a breaker looks like now, for metrics, logs and tests.
struct GRPC_RESILIENCE_EXPORT BreakerSnapshot {
  BreakerState state = BreakerState::kClosed;  ///< the state it reports
  BreakerMode mode = BreakerMode::kNormal;     ///< its operating mode
  BreakerWindowCounts counts;                  ///< what its rolling window counted
  /// failure / (success + failure) over the window; 0 when nothing completed.
  double failure_rate = 0;
  /// slow / (success + failure) over the window; 0 when nothing completed.
  double slow_call_rate = 0;
  /// SRE: the current drop probability. Three-state: 1 when open, else 0.
  double drop_probability = 0;
  int64_t consecutive_failures = 0;  ///< failures in a row, up to now
  /// Bumped on every state change; reports from older generations are ignored.
  uint64_t generation = 0;
  /// How long the breaker has been in `state` (SRE: since its drop
  /// probability last rose above or fell to 0; since creation before that).
  absl::Duration time_in_state = absl::ZeroDuration();
};

/// A state change, given to the listener outside every breaker lock.
struct GRPC_RESILIENCE_EXPORT BreakerTransition {
  BreakerState from;      ///< the state it left
  BreakerState to;        ///< the state it entered
  absl::Time at;          ///< when, on the breaker's clock
  TransitionCause cause;  ///< why
  /// What tripped a three-state breaker (cause kConsecutiveFailures,
  /// kFailureRate or kSlowCallRate): the failures in a row, or the rate over
  /// `calls` completed calls of the window, and the threshold it reached. 0
  /// for the other causes.
  ///@{
  double figure = 0;
  double threshold = 0;
  int64_t calls = 0;
  ///@}
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_BREAKER_STATE_H_
