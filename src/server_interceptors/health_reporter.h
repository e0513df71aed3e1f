// File: src/server_interceptors/health_reporter.h
//
// What a server built with the library tells the standard health service
// (grpc.health.v1.Health, gRPC's default implementation, which
// AddServerInterceptors() switches on with ServerResilienceOptions::health):
// SERVING for the server as a whole ("") and for every service registered
// behind the guard once the application says it is ready
// (ServerResilience::SetServing()), NOT_SERVING as soon as a drain begins,
// so that clients whose channel checks health (healthCheckConfig, one Watch
// stream per address) stop picking this replica before its grace period
// ends. docs/replicas.md, "Health".

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_HEALTH_REPORTER_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_HEALTH_REPORTER_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "src/core/mutex.h"

namespace resilience {

// The service gRPC's health checking calls; the server interceptors leave
// its calls alone (a Watch stream is open as long as the client's channel,
// and must neither hold up a drain nor be throttled or failed on purpose).
inline constexpr absl::string_view kHealthService = "grpc.health.v1.Health";

// Whether `method` ("/grpc.health.v1.Health/Watch") is the health service's.
bool IsHealthMethod(absl::string_view method);

// HealthReporter
//
// One per ServerDrainer. Thread-safe; a drain is final: once
// NotServing() ran, Set(server, true) reports NOT_SERVING too.
class HealthReporter {
 public:
  // AddService()
  //
  // `full_name` ("cache.v1.CacheService") is reported with the server.
  void AddService(absl::string_view full_name) ABSL_LOCKS_EXCLUDED(mu_);

  // Set()
  //
  // Reports `serving` for "" and every added service on `server`'s health
  // service, and remembers it for NotServing(). False (nothing done) when
  // the server has no health service. `server` must outlive this object's
  // later calls, or be given again after a new one is built.
  bool Set(grpc::Server& server, bool serving) ABSL_LOCKS_EXCLUDED(mu_);

  // NotServing()
  //
  // NOT_SERVING for all, on the server last given to Set(); nothing when
  // there was none. Returns whether it was reporting SERVING until now (so
  // clients that check health may still be picking this server: the drain
  // serves a while, ServerResilienceOptions::not_serving_grace).
  bool NotServing() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Report(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  std::vector<std::string> services_ ABSL_GUARDED_BY(mu_);
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;  // what was reported last
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_HEALTH_REPORTER_H_
