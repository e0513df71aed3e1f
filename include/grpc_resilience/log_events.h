// File: include/grpc_resilience/log_events.h
//
// A ResilienceEvents that writes each event as one line.

#ifndef GRPC_RESILIENCE_LOG_EVENTS_H_
#define GRPC_RESILIENCE_LOG_EVENTS_H_

#include <cstdio>
#include <string>
#include <utility>

#include "grpc_resilience/resilience_events.h"

namespace resilience {

// LogEvents
//
// "<prefix><FormatEvent(event)>\n" to `out` (stderr by default), one
// fwrite per line, so lines from concurrent events do not interleave.
class LogEvents final : public ResilienceEvents {
 public:
  explicit LogEvents(std::FILE* out = stderr, std::string prefix = "")
      : out_(out), prefix_(std::move(prefix)) {}

  void OnBreakerTransition(const BreakerEvent& event) override;
  void OnThrottleSaturation(const ThrottleEvent& event) override;
  void OnOperatorAction(const OperatorEvent& event) override;
  void OnPolicyReload(const PolicyReloadEvent& event) override;
  void OnHealthCheckProblem(const HealthCheckEvent& event) override;

 private:
  void Write(const std::string& line);

  std::FILE* const out_;
  const std::string prefix_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_LOG_EVENTS_H_
