// server_only_check: a program that uses only the server side of
// grpc-resilience, linked with grpc_resilience::server alone (no client
// library, no hiredis, no civetweb: scripts/consumer.sh checks its link
// line and `ldd`), checked.
//
// Serves shop.v1.Inventory on localhost:0 behind grpc_resilience/server.h
// and calls it with a plain gRPC channel. ListItems has a local rate limit
// of one call; GetItem a fleet-wide one (throttle.global), which needs
// grpc_resilience::redis_limits that this program does not link. Checks:
//   - the policies load without warnings (the file is fine);
//   - AddServerInterceptors() warns about the global limit, naming its path
//     and the library to link;
//   - GetItem is rejected RESOURCE_EXHAUSTED with the same words, and its
//     handler never runs;
//   - ListItems: the first call is served, the second rejected by the rate;
//     with its throttle switched to shadow (SetEnforcement()), the third is
//     served and counted as one it would have rejected.
// Prints one line per check; exits 0 only if all hold. Every call has a
// deadline, and an alarm ends the process if anything hangs.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "grpc_resilience/server.h"
#include "grpcpp/grpcpp.h"
#include "shop/v1/inventory.grpc.pb.h"

namespace {

constexpr char kServerPolicies[] = R"json({
  "methodConfig": [
    {"name": [{"service": "shop.v1.Inventory", "method": "ListItems"}],
     "throttle": {"ratePerSecond": 0.001, "burst": 1}},
    {"name": [{"service": "shop.v1.Inventory", "method": "GetItem"}],
     "throttle": {"global": {"redis": "127.0.0.1:6379", "key": "shop",
                             "ratePerSecond": 100, "burst": 100,
                             "expectedReplicas": 2}}}
  ]
})json";

class InventoryService final : public shop::v1::Inventory::Service {
 public:
  grpc::Status GetItem(grpc::ServerContext* /*context*/, const shop::v1::GetItemRequest* request,
                       shop::v1::Item* item) override {
    get_runs.fetch_add(1);
    item->set_sku(request->sku());
    return grpc::Status::OK;
  }
  grpc::Status ListItems(grpc::ServerContext* /*context*/,
                         const shop::v1::ListItemsRequest* /*request*/,
                         grpc::ServerWriter<shop::v1::Item>* writer) override {
    list_runs.fetch_add(1);
    shop::v1::Item item;
    item.set_sku("apple");
    writer->Write(item);
    return grpc::Status::OK;
  }
  std::atomic<int> get_runs{0};
  std::atomic<int> list_runs{0};
};

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

grpc::Status List(shop::v1::Inventory::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  shop::v1::ListItemsRequest request;
  auto reader = stub.ListItems(&context, request);
  shop::v1::Item item;
  while (reader->Read(&item)) {
  }
  return reader->Finish();
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
  Check(policies->warnings().empty(), "policies load",
        policies->warnings().empty() ? "no warnings" : policies->warnings()[0]);

  InventoryService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &port);
  std::shared_ptr<resilience::ServerResilience> resilience =
      resilience::AddServerInterceptors(builder, *policies);
  const std::string path = "methodConfig[1].throttle.global";
  const std::string fix = "link grpc_resilience::redis_limits";
  const std::vector<std::string>& warnings = resilience->warnings();
  Check(warnings.size() == 1 && Contains(warnings[0], path) && Contains(warnings[0], fix),
        "warning about throttle.global",
        warnings.empty() ? "none" : warnings[0]);
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

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  shop::v1::GetItemRequest request;
  request.set_sku("apple");
  shop::v1::Item item;
  grpc::Status status = stub->GetItem(&context, request, &item);
  Check(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
            Contains(status.error_message(), path) && Contains(status.error_message(), fix) &&
            service.get_runs.load() == 0,
        "GetItem rejected, handler not run",
        "code " + std::to_string(status.error_code()) + ": " + status.error_message());

  const grpc::Status first = List(*stub);
  const grpc::Status second = List(*stub);
  Check(first.ok() && second.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
            service.list_runs.load() == 1,
        "ListItems local rate",
        "codes " + std::to_string(first.error_code()) + ", " +
            std::to_string(second.error_code()) + "; handler runs " +
            std::to_string(service.list_runs.load()));

  // A live update with the same policies: the same warning about the
  // global limit, a new generation, nothing changed.
  absl::StatusOr<resilience::PolicyUpdate> update = resilience->Update(*policies);
  Check(update.ok() && update->generation == 2 && update->changed.empty() &&
            update->warnings.size() == 1 && Contains(update->warnings[0], path) &&
            resilience->policy_generation() == 2,
        "policy update",
        update.ok() ? "generation " + std::to_string(update->generation) + ": " + update->Summary()
                    : update.status().ToString());

  // Shadow mode at runtime: ListItems' rate limit only counts what it
  // would have rejected; a client policy is refused with a reason.
  const absl::Status shadow = resilience->SetEnforcement(
      "/shop.v1.Inventory/ListItems", resilience::EnforcedPolicy::kThrottle,
      resilience::EnforcementMode::kShadow);
  const grpc::Status third = List(*stub);
  const resilience::ServerMethodStats list_stats =
      resilience->Stats("/shop.v1.Inventory/ListItems");
  const absl::Status breaker = resilience->SetEnforcement(
      "/shop.v1.Inventory/ListItems", resilience::EnforcedPolicy::kBreaker,
      resilience::EnforcementMode::kOff);
  Check(shadow.ok() && third.ok() && list_stats.shadow_throttle == 1 &&
            breaker.code() == absl::StatusCode::kInvalidArgument,
        "SetEnforcement shadow",
        shadow.ToString() + "; code " + std::to_string(third.error_code()) + "; shadow " +
            std::to_string(list_stats.shadow_throttle) + "; breaker: " + breaker.ToString());

  resilience->DrainAndShutdown(*server, absl::Now() + absl::Seconds(1));
  std::printf("%s\n", failures == 0 ? "server_only_check: all checks hold"
                                    : "server_only_check: FAILED");
  return failures == 0 ? 0 : 1;
}
