// File: src/client_interceptors/health_name_check.h
//
// Finds out, for a channel with healthCheckConfig.serviceName, whether its
// servers know that name: gRPC 1.51 takes a health service's SERVICE_UNKNOWN
// as NOT_SERVING, so a name no server registered (a typo) fails every call
// of the channel with UNAVAILABLE "backend unhealthy" and says nothing more.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_NAME_CHECK_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_NAME_CHECK_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/resilience_events.h"
#include "grpc_resilience/status_report.h"
#include "src/client_interceptors/health_probe_sender.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// HealthNameCheck
//
// One per channel whose policy file has a non-empty
// healthCheckConfig.serviceName (made by CreateResilientChannel(), which
// knows the target). The call objects hand it every UNAVAILABLE they see
// (OnUnavailable()); one whose message says "backend unhealthy" (gRPC's pick
// failure while health checking holds every endpoint back) starts a check,
// at most one per kInterval: a grpc.health.v1.Health/Check for the name at
// each endpoint of the target (each address of an ipv4:/ipv6: list, else the
// target itself), on the HealthProbeSender's channels. An answer NOT_FOUND
// (the server's health service does not know the name) is a problem of that
// endpoint: told once to the events listener (OnHealthCheckProblem(), on
// the events thread, which LogEvents writes to the log) and listed by
// AppendStatus() (the status page) until a later check finds the name
// known there (any other answer but an unreachable server). Thread-safe.
class HealthNameCheck {
 public:
  // Least time between two checks.
  static constexpr absl::Duration kInterval = absl::Seconds(10);
  // Each Check's deadline.
  static constexpr absl::Duration kTimeout = absl::Seconds(2);

  // `sender` must outlive this object; `events` may be null.
  HealthNameCheck(std::string channel, std::string target, std::string service,
                  HealthProbeSender& sender, Clock& clock,
                  std::shared_ptr<ResilienceEvents> events);
  ~HealthNameCheck();

  HealthNameCheck(const HealthNameCheck&) = delete;
  HealthNameCheck& operator=(const HealthNameCheck&) = delete;

  // An attempt or call ended UNAVAILABLE with `message`.
  void OnUnavailable(absl::string_view message) ABSL_LOCKS_EXCLUDED(mu_);

  // The endpoints whose health service does not know the name.
  void AppendStatus(StatusReport& report) ABSL_LOCKS_EXCLUDED(mu_);

  // EndpointsOf()
  //
  // The addresses of an "ipv4:a,b" / "ipv6:[a]:p,[b]:p" target, each as a
  // target of its own ("ipv4:a"); any other target: itself (checked on a
  // plain channel of its own: pick_first, no health checking).
  static std::vector<std::string> EndpointsOf(absl::string_view target);

 private:
  void Answered(const std::string& endpoint, const grpc::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string channel_;
  const std::string target_;
  const std::string service_;
  HealthProbeSender& sender_;
  Clock& clock_;
  const std::shared_ptr<ResilienceEvents> events_;

  Mutex mu_;
  bool checked_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_check_ ABSL_GUARDED_BY(mu_);
  // Endpoint -> the problem found there.
  std::map<std::string, std::string> problems_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_NAME_CHECK_H_
