#include "src/client_interceptors/health_name_check.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/client_interceptors/breaker_event_queue.h"

namespace resilience {

HealthNameCheck::HealthNameCheck(std::string channel, std::string target, std::string service,
                                 HealthProbeSender& sender, Clock& clock,
                                 std::shared_ptr<ResilienceEvents> events)
    : channel_(std::move(channel)),
      target_(std::move(target)),
      service_(std::move(service)),
      sender_(sender),
      clock_(clock),
      events_(std::move(events)) {}

HealthNameCheck::~HealthNameCheck() = default;

std::vector<std::string> HealthNameCheck::EndpointsOf(absl::string_view target) {
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (!absl::StartsWith(target, scheme)) continue;
    std::vector<std::string> endpoints;
    for (absl::string_view address :
         absl::StrSplit(target.substr(scheme.size()), ',', absl::SkipEmpty())) {
      endpoints.push_back(absl::StrCat(scheme, address));
    }
    if (!endpoints.empty()) return endpoints;
  }
  // A plain channel to it (pick_first, no health checking) reaches one
  // of its addresses.
  return {std::string(target)};
}

void HealthNameCheck::OnUnavailable(absl::string_view message) {
  // gRPC 1.51's words for a subchannel its health check holds back
  // (health_check_client.cc), in the pick failure round_robin reports.
  if (!absl::StrContains(message, "backend unhealthy")) return;
  {
    const absl::Time now = clock_.Now();
    MutexLock lock(&mu_);
    if (checked_ && now - last_check_ < kInterval) return;
    checked_ = true;
    last_check_ = now;
  }
  for (const std::string& endpoint : EndpointsOf(target_)) {
    sender_.Check(endpoint, service_, kTimeout,
                  HealthProbeSender::StatusDone(
                      [this, endpoint](const grpc::Status& status, RecoveryProbe::Answer) {
                        Answered(endpoint, status);
                      }));
  }
}

void HealthNameCheck::Answered(const std::string& endpoint, const grpc::Status& status) {
  const std::string& shown = endpoint;
  // An unreachable server says nothing about the name.
  if (status.error_code() != grpc::StatusCode::OK &&
      status.error_code() != grpc::StatusCode::NOT_FOUND &&
      status.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
    return;
  }
  HealthCheckEvent event;
  {
    MutexLock lock(&mu_);
    if (status.error_code() != grpc::StatusCode::NOT_FOUND) {
      problems_.erase(shown);  // the name is known there (or no health service)
      return;
    }
    if (problems_.count(shown) != 0) return;  // told already
    event.channel = channel_;
    event.endpoint = shown;
    event.service = service_;
    event.problem =
        "unknown to the server's health service (its Check answered NOT_FOUND; gRPC 1.51 "
        "takes the SERVICE_UNKNOWN of its Watch as NOT_SERVING, so every call of the channel "
        "fails UNAVAILABLE \"backend unhealthy\"): set healthCheckConfig.serviceName to a "
        "name the server registers, or \"\" for the whole server";
    problems_.emplace(shown, event.problem);
  }
  if (events_ == nullptr) return;
  BreakerEventQueue::PostToEventsThread(
      [events = events_, event = std::move(event)] { events->OnHealthCheckProblem(event); });
}

void HealthNameCheck::AppendStatus(StatusReport& report) {
  MutexLock lock(&mu_);
  for (const auto& [endpoint, problem] : problems_) {
    report.health_checks.push_back(HealthCheckStatus{channel_, endpoint, service_, problem});
  }
}

}  // namespace resilience
