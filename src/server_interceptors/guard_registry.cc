#include "src/server_interceptors/guard_registry.h"

#include <utility>

#include "absl/status/statusor.h"

namespace resilience {

absl::Status GuardRegistry::Register(grpc::ServerBuilder& builder, grpc::Service* service,
                                     absl::string_view full_name) {
  absl::StatusOr<std::unique_ptr<GuardedService>> guard =
      GuardedService::Create(service, full_name, &verdicts_);
  if (!guard.ok()) return guard.status();
  builder.RegisterService(guard->get());
  health_.AddService(full_name);
  MutexLock lock(&mu_);
  for (const std::string& method : (*guard)->methods()) guarded_methods_.insert(method);
  guards_.push_back(*std::move(guard));
  return absl::OkStatus();
}

bool GuardRegistry::Guards(absl::string_view method) const {
  MutexLock lock(&mu_);
  return guarded_methods_.contains(method);
}

}  // namespace resilience
