// File: src/server_interceptors/guard_registry.h
//
// The services a server registered behind a GuardedService, and the methods
// they guard.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARD_REGISTRY_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARD_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_builder.h"
#include "src/core/mutex.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/guarded_service.h"
#include "src/server_interceptors/health_reporter.h"

namespace resilience {

// GuardRegistry
//
// One per ServerResilienceImpl: owns the GuardedServices it registered with
// a ServerBuilder (they must outlive the server, as the registry's owner
// does), tells the health reporter of their services, and answers whether a
// method is guarded (a resolved method's ServerMethodState::guarded). This
// class is thread-safe.
class GuardRegistry {
 public:
  // `verdicts`: what the guards read; `health`: told of each service
  // registered. Both must outlive the registry.
  GuardRegistry(CallVerdicts& verdicts, HealthReporter& health)
      : verdicts_(verdicts), health_(health) {}
  GuardRegistry(const GuardRegistry&) = delete;
  GuardRegistry& operator=(const GuardRegistry&) = delete;

  // Register()
  //
  // Registers `service`, an implementation of the proto service
  // `full_name` ("cache.v1.CacheService"), with `builder` behind a
  // GuardedService, so that a call rejected by these interceptors never runs
  // its handlers; what ServerResilience::RegisterGuardedService() does.
  // `service` and this object must outlive the server. InvalidArgument, and
  // nothing registered, for a service the guard cannot serve (see
  // GuardedService).
  absl::Status Register(grpc::ServerBuilder& builder, grpc::Service* service,
                        absl::string_view full_name) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether `method` ("/pkg.Service/Method") belongs to a guarded service.
  bool Guards(absl::string_view method) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  CallVerdicts& verdicts_;
  HealthReporter& health_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<GuardedService>> guards_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> guarded_methods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARD_REGISTRY_H_
