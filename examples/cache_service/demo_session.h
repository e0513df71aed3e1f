// File: examples/cache_service/demo_session.h
//
// cache_demo's session: numbered steps over one stub with their outcome
// checked, and what every scenario starts from (a cache server with the
// shipped policies edited, a channel with the shipped client chain).

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SESSION_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SESSION_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/cache_server.h"
#include "grpc_resilience/client_resilience.h"
#include "grpc_resilience/policy.h"
#include "grpcpp/channel.h"

namespace cache_service {

// The deadline of the demo's own calls.
inline constexpr absl::Duration kCallTimeout = absl::Seconds(5);

// DemoSession
//
// Not thread-safe: the demo's main thread drives it.
class DemoSession {
 public:
  explicit DemoSession(std::unique_ptr<cache::v1::CacheService::Stub> stub)
      : stub_(std::move(stub)) {}

  // Prints a numbered step with its outcome and remembers whether it held.
  void Step(const std::string& what, const std::string& result, bool as_expected) {
    ++steps_;
    std::printf("%2d. %-58s %s%s\n", steps_, what.c_str(), result.c_str(),
                as_expected ? "" : "   <-- NOT AS EXPECTED");
    if (!as_expected) ++failures_;
  }

  grpc::Status Store(const std::string& key, const std::string& value) {
    return StoreValue(*stub_, key, value, kCallTimeout);
  }
  grpc::Status Get(const std::string& key, std::string* value) {
    return GetValue(*stub_, key, value, kCallTimeout);
  }
  grpc::Status Dump(std::vector<std::string>* keys) { return DumpKeys(*stub_, keys, kCallTimeout); }

  cache::v1::CacheService::Stub& stub() { return *stub_; }
  // Sends the demo's calls through `stub` (a scenario's own server and
  // channel) and returns the stub used so far, to be swapped back.
  std::unique_ptr<cache::v1::CacheService::Stub> SwapStub(
      std::unique_ptr<cache::v1::CacheService::Stub> stub) {
    stub_.swap(stub);
    return stub;
  }
  int failures() const { return failures_; }

 private:
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
  int steps_ = 0;
  int failures_ = 0;
};

// A status as the demo prints it: "OK", or "CODE: message".
std::string Show(const grpc::Status& status);

// What a scenario's backend does wrong: a method's faultInjection as a
// policy file writes it (a JSON object, e.g. {"abortCode": "UNAVAILABLE",
// "abortFraction": 0.05}), or "" for none. Called with the method of each
// name of each entry of the shipped policies ("" for a name without one).
using Faults = std::function<std::string(const std::string& method)>;

// The shipped policies, each entry given the fault injection `faults` names
// for one of its methods.
absl::StatusOr<resilience::PolicySet> ShippedPoliciesWith(const Faults& faults);

// A cache server for one scenario: the shipped policies with `faults`; null
// (and a line on stderr) when it cannot start.
std::unique_ptr<CacheServer> StartServer(const Faults& faults, int port = 0);

// A client channel with the shipped policies' client chain (retry ->
// timeout -> breaker), reconnecting quickly so that a restarted server is
// found within the demo's short pauses. `*state` receives its
// ClientResilience.
std::shared_ptr<grpc::Channel> ResilientChannel(
    const std::string& target, std::shared_ptr<resilience::ClientResilience>* state);

// No fault anywhere.
std::string NoFaults(const std::string& method);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SESSION_H_
