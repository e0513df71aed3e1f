// redis_limits_check: a server that plugs in the Redis store of fleet-wide
// rate limits (grpc_resilience/redis_limits.h, library
// grpc_resilience::redis_limits), checked.
//
// Serves shop.v1.Inventory on localhost:0 behind grpc_resilience/server.h
// with GetItem under a throttle.global of 0.2 calls/s shared by 2 replicas,
// against a Redis that is not there (127.0.0.1:1, refused): the server then
// admits its local share, a burst of 1. Calls it with a plain gRPC channel.
// Checks:
//   - CheckGlobalThrottleCredentials() accepts the policies (no AUTH);
//   - with ServerResilienceOptions::fleet_limits = RedisFleetLimits(),
//     AddServerInterceptors() has nothing to warn about;
//   - of 3 GetItem calls, the first is served and the others rejected
//     RESOURCE_EXHAUSTED by the global limit ("global rate limit");
//   - the server's metrics show the limit on its local share
//     (grpc_resilience_server_global_limit_using_store{key="shop"} 0).
// Prints one line per check; exits 0 only if all hold. Every call has a
// deadline, and an alarm ends the process if anything hangs.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "grpc_resilience/metrics.h"
#include "grpc_resilience/redis_limits.h"
#include "grpc_resilience/server.h"
#include "grpcpp/grpcpp.h"
#include "shop/v1/inventory.grpc.pb.h"

namespace {

constexpr char kServerPolicies[] = R"json({
  "methodConfig": [{
    "name": [{"service": "shop.v1.Inventory", "method": "GetItem"}],
    "throttle": {"global": {"redis": "127.0.0.1:1", "key": "shop", "ratePerSecond": 0.2,
                            "burst": 2, "expectedReplicas": 2}}
  }]
})json";

class InventoryService final : public shop::v1::Inventory::Service {
 public:
  grpc::Status GetItem(grpc::ServerContext* /*context*/, const shop::v1::GetItemRequest* request,
                       shop::v1::Item* item) override {
    runs.fetch_add(1);
    item->set_sku(request->sku());
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  alarm(60);  // a hang is a failure, not a stuck CI job

  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(kServerPolicies);
  if (!policies.ok()) {
    std::printf("FAIL policies: %s\n", policies.status().ToString().c_str());
    return 1;
  }
  const absl::Status credentials = resilience::CheckGlobalThrottleCredentials(*policies);
  Check(credentials.ok(), "credentials", credentials.ok() ? "none to check" : credentials.ToString());

  InventoryService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &port);
  resilience::ServerResilienceOptions options;
  options.fleet_limits = resilience::RedisFleetLimits();
  std::shared_ptr<resilience::ServerResilience> resilience =
      resilience::AddServerInterceptors(builder, *policies, std::move(options));
  Check(resilience->warnings().empty(), "no warnings",
        resilience->warnings().empty() ? "none" : resilience->warnings()[0]);
  absl::Status guarded = resilience->RegisterGuardedService<shop::v1::Inventory>(builder, &service);
  if (!guarded.ok()) {
    std::printf("FAIL RegisterGuardedService: %s\n", guarded.ToString().c_str());
    return 1;
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::printf("FAIL server: cannot listen on localhost:0\n");
    return 1;
  }
  std::unique_ptr<shop::v1::Inventory::Stub> stub = shop::v1::Inventory::NewStub(
      grpc::CreateChannel("localhost:" + std::to_string(port), grpc::InsecureChannelCredentials()));

  int ok = 0;
  int limited = 0;
  std::string message;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    shop::v1::GetItemRequest request;
    request.set_sku("apple");
    shop::v1::Item item;
    const grpc::Status status = stub->GetItem(&context, request, &item);
    if (status.ok()) ++ok;
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        status.error_message().find("global rate limit") != std::string::npos) {
      ++limited;
      message = status.error_message();
    }
  }
  Check(ok == 1 && limited == 2 && service.runs.load() == 1, "local share",
        std::to_string(ok) + " served, " + std::to_string(limited) + " limited (" + message +
            "), handler runs " + std::to_string(service.runs.load()));

  resilience::PrometheusText text;
  resilience->AppendMetrics(text);
  const std::string metrics = text.Finish();
  const std::string sample = "grpc_resilience_server_global_limit_using_store{key=\"shop\"} 0";
  Check(metrics.find(sample) != std::string::npos, "metrics", sample);

  resilience->DrainAndShutdown(*server, absl::Now() + absl::Seconds(1));
  std::printf("%s\n", failures == 0 ? "redis_limits_check: all checks hold"
                                    : "redis_limits_check: FAILED");
  return failures == 0 ? 0 : 1;
}
