// A ResilienceEvents that keeps every event as its one-line text.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_RECORDING_EVENTS_H_
#define GRPC_RESILIENCE_TESTS_TESTING_RECORDING_EVENTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"
#include "grpc_resilience/events.h"

namespace resilience::testing {

class RecordingEvents final : public ResilienceEvents {
 public:
  void OnBreakerTransition(const BreakerEvent& event) override { Keep(FormatEvent(event)); }
  void OnThrottleSaturation(const ThrottleEvent& event) override { Keep(FormatEvent(event)); }
  void OnOperatorAction(const OperatorEvent& event) override { Keep(FormatEvent(event)); }
  void OnPolicyReload(const PolicyReloadEvent& event) override { Keep(FormatEvent(event)); }
  void OnHealthCheckProblem(const HealthCheckEvent& event) override { Keep(FormatEvent(event)); }
  void OnShadowDecisions(const ShadowDecisionEvent& event) override { Keep(FormatEvent(event)); }

  std::vector<std::string> lines() {
    MutexLock lock(&mu_);
    return lines_;
  }

 private:
  void Keep(std::string line) {
    MutexLock lock(&mu_);
    lines_.push_back(std::move(line));
  }

  Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_RECORDING_EVENTS_H_
