/// \file include/grpc_resilience/log_events.h
///
/// A ResilienceEvents that writes each event as one line.

#ifndef GRPC_RESILIENCE_LOG_EVENTS_H_
#define GRPC_RESILIENCE_LOG_EVENTS_H_

#include <cstdio>
#include <string>
#include <utility>

#include "grpc_resilience/export.h"
#include "grpc_resilience/resilience_events.h"

namespace resilience {

/// LogEvents
///
/// Writes each event as one line,
/// `"<prefix><time> <FormatEvent(event)>\n"`, to `out` (stderr by default),
/// one fwrite per line, so lines from concurrent events do not interleave.
/// The time is the wall-clock time of the write, RFC 3339 in UTC to the
/// millisecond ("2026-12-07T14:03:59.128Z"); the event's text is escaped
/// (control characters and bytes that are not UTF-8 as `\xHH`, a newline as
/// `\n`), so whatever a request put in it (a method name) stays one line.
/// The prefix (e.g. a program's name) comes first, so a program's lines keep
/// starting with it:
/// \code{.unparsed}
///   cache_client: 2026-12-07T14:03:59.128Z breaker /cache.v1.CacheService/Get
///   on 127.0.0.1:50051: closed -> open (...)
/// \endcode
class GRPC_RESILIENCE_EXPORT LogEvents final : public ResilienceEvents {
 public:
  /// absl::FormatTime's format of the time at the start of each line.
  static constexpr const char* kTimestampFormat = "%Y-%m-%d%ET%H:%M:%E3SZ";

  /// Writes to `out` (not closed by it; it must outlive this object), each
  /// line starting with `prefix`.
  explicit LogEvents(std::FILE* out = stderr, std::string prefix = "")
      : out_(out), prefix_(std::move(prefix)) {}

  /// Writes the event's line.
  ///@{
  void OnBreakerTransition(const BreakerEvent& event) override;
  void OnThrottleSaturation(const ThrottleEvent& event) override;
  void OnOperatorAction(const OperatorEvent& event) override;
  void OnPolicyReload(const PolicyReloadEvent& event) override;
  void OnHealthCheckProblem(const HealthCheckEvent& event) override;
  void OnShadowDecisions(const ShadowDecisionEvent& event) override;
  ///@}

 private:
  void Write(const std::string& line);

  std::FILE* const out_;
  const std::string prefix_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_LOG_EVENTS_H_
