// File: examples/cache_service/received_attempts.h
//
// What one server received, per method: every attempt gRPC handed it, and of
// them the retries, those carrying a count of earlier attempts above 0
// (`grpc-previous-rpc-attempts`, which gRPC's built-in retry and
// grpc-resilience's client both send, or `x-retry-attempt`). With the counts
// of every replica, the routing experiment (experiments/replicas/routing.py)
// tells where the clients' retries went, whoever made them.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_RECEIVED_ATTEMPTS_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_RECEIVED_ATTEMPTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/string_ref.h"
#include "examples/common/mutex.h"

namespace cache_service {

// ReceivedAttempts
//
// Counts per method name, at most kMaxMethods names (later ones are counted
// under "other": the name is the client's to choose). Factory() makes the
// server interceptor factory that counts: gRPC calls it once per call with
// the client's metadata already bound (both APIs), and it makes no
// interceptor, so the call's path is unchanged (cache_server keeps deciding
// throttle rejections on arrival). This class is thread-safe.
class ReceivedAttempts {
 public:
  static constexpr size_t kMaxMethods = 64;

  struct Counts {
    int64_t attempts = 0;  // every call received
    int64_t retries = 0;   // of them, those with an earlier-attempts count > 0
  };

  // Count()
  //
  // One attempt of `method` received; `retry` when it is not the call's first.
  void Count(absl::string_view method, bool retry) ABSL_LOCKS_EXCLUDED(mu_);

  // The counts so far, by method name.
  std::map<std::string, Counts> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Render()
  //
  // The counts as Prometheus text, to append to a server's /metrics:
  // cache_server_attempts_received_total and
  // cache_server_retries_received_total, label grpc_method; "" before the
  // first call.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

  // IsRetry()
  //
  // Whether `metadata` (a call's client metadata) says the call had earlier
  // attempts: grpc-previous-rpc-attempts, else x-retry-attempt, a decimal
  // number above 0.
  static bool IsRetry(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

  // Factory()
  //
  // A factory counting every call of the server into this object, which
  // must outlive the server. Put it first in the server's list.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Factory();

 private:
  mutable example_sync::Mutex mu_;
  std::map<std::string, Counts, std::less<>> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_RECEIVED_ATTEMPTS_H_
