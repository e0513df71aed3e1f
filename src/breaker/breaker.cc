#include "src/breaker/breaker.h"

namespace resilience {

absl::string_view BreakerStateName(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed:
      return "closed";
    case BreakerState::kOpen:
      return "open";
    case BreakerState::kHalfOpen:
      return "half-open";
  }
  return "unknown";
}

absl::string_view BreakerModeName(BreakerMode mode) {
  switch (mode) {
    case BreakerMode::kNormal:
      return "normal";
    case BreakerMode::kForceOpen:
      return "force_open";
    case BreakerMode::kForceClosed:
      return "force_closed";
    case BreakerMode::kDisabled:
      return "disabled";
    case BreakerMode::kMetricsOnly:
      return "metrics_only";
  }
  return "unknown";
}

absl::string_view EffectiveBreakerStateName(BreakerMode mode, BreakerState state) {
  if (mode == BreakerMode::kForceOpen) return "forced open";
  if (mode == BreakerMode::kForceClosed) return "forced closed";
  return BreakerStateName(state);
}

absl::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNone:
      return "admitted";
    case RejectReason::kOpen:
      return "open";
    case RejectReason::kHalfOpenProbeLimit:
      return "half-open, probe limit reached";
    case RejectReason::kHalfOpenProbeInterval:
      return "half-open, next probe not due";
    case RejectReason::kAwaitingConnection:
      return "probe waiting for the channel to connect";
    case RejectReason::kForcedOpen:
      return "forced open";
    case RejectReason::kDropped:
      return "dropped by adaptive throttling";
  }
  return "unknown";
}

absl::string_view TransitionCauseName(TransitionCause cause) {
  switch (cause) {
    case TransitionCause::kFailureRate:
      return "failure rate reached its threshold";
    case TransitionCause::kConsecutiveFailures:
      return "consecutive failures reached their threshold";
    case TransitionCause::kSlowCallRate:
      return "slow-call rate reached its threshold";
    case TransitionCause::kOpenPeriodEnded:
      return "open period ended";
    case TransitionCause::kProbeFailed:
      return "a half-open probe failed";
    case TransitionCause::kProbeTimedOut:
      return "a half-open probe took too long";
    case TransitionCause::kProbesSucceeded:
      return "half-open probes succeeded";
    case TransitionCause::kDropsStarted:
      return "drop probability rose above 0";
    case TransitionCause::kDropsStopped:
      return "drop probability fell to 0";
    case TransitionCause::kReset:
      return "reset by an operator";
    case TransitionCause::kHealthServing:
      return "the health service answered SERVING";
    case TransitionCause::kHealthNotServing:
      return "the health service found the server not serving";
    case TransitionCause::kReconnected:
      return "the channel is connected again";
  }
  return "unknown";
}

absl::string_view BreakerCommandName(BreakerCommand command) {
  switch (command) {
    case BreakerCommand::kForceOpen:
      return "force_open";
    case BreakerCommand::kForceClosed:
      return "force_closed";
    case BreakerCommand::kAutomatic:
      return "automatic";
    case BreakerCommand::kReset:
      return "reset";
  }
  return "unknown";
}

std::optional<BreakerCommand> ParseBreakerCommand(absl::string_view name) {
  for (BreakerCommand c : {BreakerCommand::kForceOpen, BreakerCommand::kForceClosed,
                           BreakerCommand::kAutomatic, BreakerCommand::kReset}) {
    if (name == BreakerCommandName(c)) return c;
  }
  return std::nullopt;
}

void Breaker::ContinueFrom(const BreakerSnapshot& previous) {
  if (previous.mode == BreakerMode::kForceOpen) Control(BreakerCommand::kForceOpen);
  if (previous.mode == BreakerMode::kForceClosed) Control(BreakerCommand::kForceClosed);
}

}  // namespace resilience
