// client_only_check: a program that uses only the client side of
// grpc-resilience, linked with grpc_resilience::client alone (no server
// library, no hiredis, no civetweb), checked.
//
// Serves shop.v1.Inventory on localhost:0 with plain gRPC (none of our server
// interceptors), calls it through a channel from grpc_resilience/client.h
// with GetItem retried on UNAVAILABLE, and checks:
//   - the policies load without warnings (the names are linked);
//   - a unary call succeeds;
//   - a call whose first attempt the server fails with UNAVAILABLE succeeds
//     on the retry the policy asks for: two attempts reach the server;
//   - a call that fails with NOT_FOUND (not retryable) is not retried;
//   - a call whose every attempt fails with UNAVAILABLE is answered by the
//     fallback registered with SetFallback<Request, Response>() (FellBack());
//   - the metrics text the program builds with grpc_resilience/metrics.h is
//     valid;
//   - a policy file watched with grpc_resilience/policy_file_watcher.h is
//     reloaded into the channel on request (as on SIGHUP);
//   - the breaker the file puts in shadow mode is switched to enforce by
//     SetEnforcement() (grpc_resilience/enforcement_mode.h), and a server's
//     policy is refused.
// Prints one line per check; exits 0 only if all hold. Every call has a
// deadline, and an alarm ends the process if anything hangs.

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "grpc_resilience/client.h"
#include "grpc_resilience/criticality.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/fallback.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_file_watcher.h"
#include "grpcpp/grpcpp.h"
#include "shop/v1/inventory.grpc.pb.h"

namespace {

constexpr char kClientPolicies[] = R"json({
  "methodConfig": [{
    "name": [{"service": "shop.v1.Inventory", "method": "GetItem"}],
    "timeout": "5s",
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    "breaker": {"sre": {}, "enforcement": "shadow"}
  }]
})json";

// GetItem: "flaky" fails its first attempt with UNAVAILABLE, "missing" is
// NOT_FOUND, anything else has 7 in stock.
class PlainInventory final : public shop::v1::Inventory::Service {
 public:
  grpc::Status GetItem(grpc::ServerContext* context, const shop::v1::GetItemRequest* request,
                       shop::v1::Item* item) override {
    if (request->sku() == "sheddable") {
      // The claimed level, carried over to a call this handler would make.
      grpc::ClientContext downstream;
      const std::optional<resilience::Criticality> level = resilience::CriticalityOf(*context);
      propagated = resilience::PropagateCriticality(*context, downstream) &&
                   level == resilience::Criticality::kSheddablePlus;
    }
    if (request->sku() == "flaky" && flaky_runs.fetch_add(1) == 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "first attempt fails");
    }
    if (request->sku() == "down") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the backend is down");
    }
    if (request->sku() == "missing") {
      missing_runs.fetch_add(1);
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such item");
    }
    item->set_sku(request->sku());
    item->set_quantity(7);
    return grpc::Status::OK;
  }
  std::atomic<int> flaky_runs{0};
  std::atomic<int> missing_runs{0};
  std::atomic<bool> propagated{false};
};

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

grpc::Status Get(shop::v1::Inventory::Stub& stub, const std::string& sku, shop::v1::Item* item) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  shop::v1::GetItemRequest request;
  request.set_sku(sku);
  return stub.GetItem(&context, request, item);
}

}  // namespace

int main() {
  alarm(60);  // a hang is a failure, not a stuck CI job

  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(kClientPolicies);
  if (!policies.ok()) {
    std::printf("FAIL policies: %s\n", policies.status().ToString().c_str());
    return 1;
  }
  Check(policies->warnings().empty(), "policies load",
        policies->warnings().empty() ? "no warnings" : policies->warnings()[0]);

  PlainInventory service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::printf("FAIL server: cannot listen on localhost:0\n");
    return 1;
  }

  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      "localhost:" + std::to_string(port), grpc::InsecureChannelCredentials(), *policies);
  std::unique_ptr<shop::v1::Inventory::Stub> stub = shop::v1::Inventory::NewStub(channel.channel);

  shop::v1::Item item;
  grpc::Status status = Get(*stub, "apple", &item);
  Check(status.ok() && item.quantity() == 7, "unary call",
        "GetItem(apple) -> code " + std::to_string(status.error_code()));

  status = Get(*stub, "flaky", &item);
  Check(status.ok() && service.flaky_runs.load() == 2, "retry",
        "GetItem(flaky) -> code " + std::to_string(status.error_code()) + " after " +
            std::to_string(service.flaky_runs.load()) + " attempts on the server");

  status = Get(*stub, "missing", &item);
  Check(status.error_code() == grpc::StatusCode::NOT_FOUND && service.missing_runs.load() == 1,
        "no retry of NOT_FOUND",
        "GetItem(missing) -> code " + std::to_string(status.error_code()) + " after " +
            std::to_string(service.missing_runs.load()) + " attempt(s)");

  {
    // A fallback from code: every attempt of "down" fails, the caller gets
    // the fallback's item.
    const absl::Status set =
        resilience::SetFallback<shop::v1::GetItemRequest, shop::v1::Item>(
            *channel.resilience, "/shop.v1.Inventory/GetItem",
            [](const shop::v1::GetItemRequest& request, const grpc::Status& /*original*/,
               shop::v1::Item* fallback) {
              fallback->set_sku(request.sku());
              fallback->set_quantity(-1);  // unknown
              return grpc::Status::OK;
            });
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    shop::v1::GetItemRequest request;
    request.set_sku("down");
    shop::v1::Item answer;
    status = stub->GetItem(&context, request, &answer);
    const resilience::ClientMethodStats stats =
        channel.resilience->Stats("/shop.v1.Inventory/GetItem");
    Check(set.ok() && status.ok() && answer.sku() == "down" && answer.quantity() == -1 &&
              resilience::FellBack(context) && stats.fallbacks_failed == 1,
          "fallback",
          "GetItem(down) -> code " + std::to_string(status.error_code()) + ", quantity " +
              std::to_string(answer.quantity()) + ", fallbacks " +
              std::to_string(stats.Fallbacks()));
    resilience::SetFallback(*channel.resilience, "/shop.v1.Inventory/GetItem", nullptr)
        .IgnoreError();
  }

  // A live update with the same policies: a new generation, nothing changed,
  // calls go on.
  absl::StatusOr<resilience::PolicyUpdate> update = channel.resilience->Update(*policies);
  status = Get(*stub, "apple", &item);
  Check(update.ok() && update->generation == 2 && update->Summary() == "no method changed" &&
            channel.resilience->policy_generation() == 2 && status.ok(),
        "policy update",
        update.ok() ? "generation " + std::to_string(update->generation) + ": " + update->Summary()
                    : update.status().ToString());

  {
    // The policy file, watched: one call reloads it into the channel.
    char directory[] = "/tmp/client_only_check_XXXXXX";
    const std::string path = std::string(mkdtemp(directory) != nullptr ? directory : "/tmp") +
                             "/policies.json";
    if (FILE* f = std::fopen(path.c_str(), "w"); f != nullptr) {
      std::fputs(kClientPolicies, f);
      std::fclose(f);
    }
    absl::StatusOr<std::unique_ptr<resilience::PolicyFileWatcher>> watcher =
        resilience::PolicyFileWatcher::StartReloading(path, {}, channel.resilience);
    bool reloaded = false;
    if (watcher.ok()) {
      (*watcher)->Reload();
      for (int i = 0; i < 500 && !reloaded; ++i) {  // 5 s at most
        reloaded = channel.resilience->policy_generation() == 3;
        if (!reloaded) usleep(10000);
      }
      watcher->reset();
    }
    Check(reloaded, "policy file watcher",
          watcher.ok() ? "generation " + std::to_string(channel.resilience->policy_generation())
                       : watcher.status().ToString());
    std::remove(path.c_str());
    rmdir(directory);
  }

  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    resilience::SetCriticality(context, resilience::Criticality::kSheddablePlus);
    shop::v1::GetItemRequest request;
    request.set_sku("sheddable");
    status = stub->GetItem(&context, request, &item);
    Check(status.ok() && service.propagated.load(), "criticality",
          std::string("SetCriticality() seen and propagated by the handler: ") +
              (service.propagated.load() ? "yes" : "no"));
  }

  {
    const char* const kGetItem = "/shop.v1.Inventory/GetItem";
    const resilience::EnforcementMode before =
        channel.resilience->Stats(kGetItem).breaker_enforcement;
    const absl::Status set = channel.resilience->SetEnforcement(
        kGetItem, resilience::EnforcedPolicy::kBreaker, resilience::EnforcementMode::kEnforce);
    const absl::Status server_side = channel.resilience->SetEnforcement(
        kGetItem, resilience::EnforcedPolicy::kThrottle, resilience::EnforcementMode::kShadow);
    Check(before == resilience::EnforcementMode::kShadow && set.ok() &&
              channel.resilience->Stats(kGetItem).breaker_enforcement ==
                  resilience::EnforcementMode::kEnforce &&
              server_side.code() == absl::StatusCode::kInvalidArgument,
          "enforcement",
          std::string("breaker ") +
              std::string(resilience::EnforcementModeName(before)) + " -> " +
              std::string(resilience::EnforcementModeName(
                  channel.resilience->Stats(kGetItem).breaker_enforcement)) +
              "; throttle: " + server_side.ToString());
  }

  resilience::PrometheusText text;
  text.Counter("client_only_check_calls_total", "Calls this program made.")
      .Sample({{"grpc_method", "/shop.v1.Inventory/GetItem"}}, 3);
  Check(text.status().ok() && text.Finish().find("client_only_check_calls_total{") !=
                                  std::string::npos,
        "metrics text", text.status().ok() ? "one family" : text.status().ToString());

  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::printf("%s\n", failures == 0 ? "client_only_check: all checks hold"
                                    : "client_only_check: FAILED");
  return failures == 0 ? 0 : 1;
}
