#include "src/server_interceptors/health_reporter.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace resilience {

bool IsHealthMethod(absl::string_view method) {
  return absl::ConsumePrefix(&method, "/") && absl::ConsumePrefix(&method, kHealthService) &&
         absl::StartsWith(method, "/");
}

void HealthReporter::AddService(absl::string_view full_name) {
  MutexLock lock(&mu_);
  if (std::find(services_.begin(), services_.end(), full_name) == services_.end()) {
    services_.emplace_back(full_name);
  }
}

bool HealthReporter::Set(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return false;
  MutexLock lock(&mu_);
  health_ = health;
  Report(serving && !drained_);
  return true;
}

bool HealthReporter::NotServing() {
  MutexLock lock(&mu_);
  const bool was_serving = serving_;
  drained_ = true;
  if (health_ != nullptr) Report(false);
  return was_serving;
}

// Called with mu_ held, the one exception to "nothing calls out under a
// lock": gRPC's default service only takes its own lock and queues the
// answers of its Watch streams (sent from gRPC's threads); it runs no code
// of ours or the application's, so no lock order can form. Held, so that a
// NotServing() that began after a Set(true) is the status that stays.
void HealthReporter::Report(bool serving) {
  serving_ = serving;
  health_->SetServingStatus("", serving);
  for (const std::string& service : services_) health_->SetServingStatus(service, serving);
}

}  // namespace resilience
