#include "grpc_resilience/resilience_events.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grpc_resilience/log_events.h"
#include "src/core/clock.h"
#include "src/metrics/printable_text.h"

namespace resilience {

namespace {

// Why a breaker changed state, with the figures that made it: what tripped
// a three-state breaker against its threshold; else the cause and the
// window (failure rate, drop probability).
std::string Why(const BreakerTransition& t, const BreakerSnapshot& s) {
  switch (t.cause) {
    case TransitionCause::kConsecutiveFailures:
      return absl::StrFormat("%d consecutive failures, threshold %d",
                             static_cast<int64_t>(t.figure), static_cast<int64_t>(t.threshold));
    case TransitionCause::kFailureRate:
      return absl::StrFormat("failure rate %.2f over %d calls, threshold %.2f", t.figure, t.calls,
                             t.threshold);
    case TransitionCause::kSlowCallRate:
      return absl::StrFormat("slow-call rate %.2f over %d calls, threshold %.2f", t.figure,
                             t.calls, t.threshold);
    default:
      return absl::StrFormat("%s; failure rate %.2f over %d calls, drop probability %.2f",
                             TransitionCauseName(t.cause), s.failure_rate, s.counts.completed(),
                             s.drop_probability);
  }
}

}  // namespace

std::string FormatEvent(const BreakerEvent& event) {
  return absl::StrCat(
      "breaker ", event.method,
      event.endpoint.empty() ? "" : absl::StrCat(" at endpoint ", event.endpoint), " on ",
      event.channel, ": ", BreakerStateName(event.transition.from), " -> ",
      BreakerStateName(event.transition.to), " (", Why(event.transition, event.snapshot), ")");
}

std::string FormatEvent(const ThrottleEvent& event) {
  // "svc/" covers the service's every method: "svc/*".
  const std::string scope = event.scope.empty()         ? std::string("every method")
                            : event.scope.back() == '/' ? absl::StrCat(event.scope, "*")
                                                        : event.scope;
  return event.kind == ThrottleEvent::Kind::kSaturated
             ? absl::StrCat("throttle ", event.method, " (scope ", scope, "): saturated (",
                            event.cause, ")")
             : absl::StrCat("throttle ", event.method, " (scope ", scope,
                            "): admitting again (saturated for ",
                            absl::FormatDuration(absl::Trunc(event.saturated_for,
                                                             absl::Milliseconds(1))),
                            ", ", event.rejected, " calls rejected)");
}

std::string FormatEvent(const OperatorEvent& event) {
  if (event.enforcement.has_value()) {
    const std::string head = absl::StrCat(
        "operator enforcement ", EnforcementModeName(*event.enforcement), " of ",
        EnforcedPolicyName(event.policy), " ", event.method, " on ", event.channel, " (",
        event.origin, "): ");
    if (!event.applied) return absl::StrCat(head, "not applied: ", event.error);
    return absl::StrCat(head, "was ", EnforcementModeName(event.previous));
  }
  const std::string head =
      absl::StrCat("operator ", BreakerCommandName(event.command), " of breaker ", event.method,
                   event.endpoint.empty() ? "" : absl::StrCat(" endpoint ", event.endpoint),
                   " on ", event.channel, " (", event.origin, "): ");
  if (!event.applied) return absl::StrCat(head, "not applied: ", event.error);
  // "forced open": what the breaker does with calls, then what its state
  // machine says (it decides again after "automatic").
  const BreakerSnapshot& s = event.snapshot;
  const bool forced = s.mode == BreakerMode::kForceOpen || s.mode == BreakerMode::kForceClosed;
  return absl::StrCat(head, "now ", EffectiveBreakerStateName(s.mode, s.state),
                      forced ? absl::StrCat(" (own state ", BreakerStateName(s.state), ")") : "");
}

std::string FormatEvent(const PolicyReloadEvent& event) {
  const std::string from = event.source.empty() ? "" : absl::StrCat(" from ", event.source);
  if (!event.applied) {
    return absl::StrCat("policy reload on ", event.component, from, " failed, generation ",
                        event.update.generation, " stays in force: ", event.error);
  }
  std::string line = absl::StrCat("policies reloaded on ", event.component, from,
                                  " (generation ", event.update.generation,
                                  "): ", event.update.Summary());
  std::vector<std::string> lists;
  const auto list = [&lists](absl::string_view what, const std::vector<std::string>& methods) {
    if (!methods.empty()) lists.push_back(absl::StrCat(what, " ", absl::StrJoin(methods, ", ")));
  };
  list("changed", event.update.changed);
  list("added", event.update.added);
  list("removed", event.update.removed);
  if (!lists.empty()) absl::StrAppend(&line, " (", absl::StrJoin(lists, "; "), ")");
  return line;
}

std::string FormatEvent(const ShadowDecisionEvent& event) {
  return absl::StrCat("shadow ", EnforcedPolicyName(event.policy), " of ", event.method, " on ",
                      event.component, " would have rejected ", event.would_have_rejected,
                      " calls in ",
                      absl::FormatDuration(absl::Trunc(event.at - event.since, absl::Seconds(1))),
                      " (", event.total, " in all; last: ", event.last_reason, "), let through");
}

std::string FormatEvent(const HealthCheckEvent& event) {
  return absl::StrCat("health check on ", event.channel, " at endpoint ", event.endpoint,
                      ": service name \"", absl::CHexEscape(event.service), "\" ", event.problem);
}

void LogEvents::OnBreakerTransition(const BreakerEvent& event) { Write(FormatEvent(event)); }

void LogEvents::OnThrottleSaturation(const ThrottleEvent& event) { Write(FormatEvent(event)); }

void LogEvents::OnOperatorAction(const OperatorEvent& event) { Write(FormatEvent(event)); }
void LogEvents::OnShadowDecisions(const ShadowDecisionEvent& event) { Write(FormatEvent(event)); }

void LogEvents::OnPolicyReload(const PolicyReloadEvent& event) { Write(FormatEvent(event)); }

void LogEvents::OnHealthCheckProblem(const HealthCheckEvent& event) { Write(FormatEvent(event)); }

void LogEvents::Write(const std::string& line) {
  // The line may hold what a request gave (an admin request's method):
  // escaped, so that it stays one line.
  const std::string text = absl::StrCat(
      prefix_, absl::FormatTime(kTimestampFormat, Clock::Real().WallNow(), absl::UTCTimeZone()),
      " ", PrintableText::Escape(line), "\n");
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace resilience
