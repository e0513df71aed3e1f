// inventory_check: what a project that adopts grpc-resilience writes, checked.
//
// Serves shop.v1.Inventory on localhost:0 behind grpc_resilience/server.h
// (ListItems rate limited to one call), calls it through a channel from
// grpc_resilience/client.h (GetItem retried on UNAVAILABLE), with a counting
// interceptor of its own on each side, and checks:
//   - a unary call succeeds;
//   - a call whose first attempt the server fails with UNAVAILABLE succeeds
//     on a retry, and the client's stats count it;
//   - a burst of ListItems calls gets RESOURCE_EXHAUSTED rejections whose
//     handler never ran;
//   - the program's own events listener hears the throttle start rejecting,
//     once for the whole burst;
//   - the interceptors the program registered saw every call;
//   - an operator can force a breaker open and back, and the status report
//     shows it.
// Prints one line per check; exits 0 only if all hold. Every call has a
// deadline, and an alarm ends the process if anything hangs.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpc_resilience/client.h"
#include "grpc_resilience/server.h"
#include "shop/v1/inventory.grpc.pb.h"

namespace {

constexpr char kGetItem[] = "/shop.v1.Inventory/GetItem";
constexpr char kListItems[] = "/shop.v1.Inventory/ListItems";
constexpr int kBurst = 4;

// The server lets one ListItems call in: a bucket of one token that refills
// in 1000 s.
constexpr char kServerPolicies[] = R"json({
  "methodConfig": [{
    "name": [{"service": "shop.v1.Inventory", "method": "ListItems"}],
    "throttle": {"ratePerSecond": 0.001, "burst": 1}
  }]
})json";

// The client retries GetItem on UNAVAILABLE and on an attempt's timeout;
// its breaker has per-endpoint breakers (the default).
constexpr char kClientPolicies[] = R"json({
  "methodConfig": [{
    "name": [{"service": "shop.v1.Inventory", "method": "GetItem"}],
    "timeout": "5s",
    "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "2s",
                    "initialBackoff": "0.01s", "maxBackoff": "0.05s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
    "breaker": {"threeState": {}}
  }]
})json";

std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(5);
}

// Calls per method, as seen by an interceptor of the application's own.
class CallCounter {
 public:
  void Add(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[method];
  }
  int Get(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_[method];
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

// The application's own listener of the library's events: keeps the
// throttle's, as text.
class ThrottleEventLog : public resilience::ResilienceEvents {
 public:
  void OnThrottleSaturation(const resilience::ThrottleEvent& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(resilience::FormatEvent(event));
    if (event.kind == resilience::ThrottleEvent::Kind::kSaturated) ++saturated_;
  }
  int saturated() {
    std::lock_guard<std::mutex> lock(mu_);
    return saturated_;
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string text;
    for (const std::string& line : lines_) text += (text.empty() ? "" : "; ") + line;
    return text;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  int saturated_ = 0;
};

// Counts the calls whose initial metadata it sees go by: on the client as it
// is sent, on the server as it arrives. (A factory alone would count too
// much: gRPC creates every interceptor of a channel for each call, also those
// after an interceptor that takes the call over and that see none of it.)
class CountingInterceptor : public grpc::experimental::Interceptor {
 public:
  CountingInterceptor(CallCounter* counter, std::string method)
      : counter_(counter), method_(std::move(method)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA) ||
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      if (!counted_) counter_->Add(method_);
      counted_ = true;
    }
    methods->Proceed();
  }

 private:
  CallCounter* counter_;
  std::string method_;
  bool counted_ = false;
};

class CountingClientFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit CountingClientFactory(CallCounter* counter) : counter_(counter) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new CountingInterceptor(counter_, info->method());
  }

 private:
  CallCounter* counter_;
};

class CountingServerFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingServerFactory(CallCounter* counter) : counter_(counter) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CountingInterceptor(counter_, info->method());
  }

 private:
  CallCounter* counter_;
};

// The application's service (sync API). GetItem("flaky") fails its first
// attempt with UNAVAILABLE.
class InventoryService final : public shop::v1::Inventory::Service {
 public:
  grpc::Status GetItem(grpc::ServerContext* context, const shop::v1::GetItemRequest* request,
                       shop::v1::Item* response) override {
    get_item_runs.fetch_add(1);
    if (request->sku() == "flaky") {
      if (flaky_runs.fetch_add(1) == 0) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "first attempt fails");
      }
      const auto& metadata = context->client_metadata();
      auto attempt = metadata.find("x-retry-attempt");
      if (attempt != metadata.end()) {
        std::lock_guard<std::mutex> lock(mu);
        retry_attempt_header.assign(attempt->second.data(), attempt->second.size());
      }
    }
    response->set_sku(request->sku());
    response->set_quantity(7);
    return grpc::Status::OK;
  }

  grpc::Status ListItems(grpc::ServerContext* /*context*/,
                         const shop::v1::ListItemsRequest* request,
                         grpc::ServerWriter<shop::v1::Item>* writer) override {
    list_items_runs.fetch_add(1);
    for (int i = 0; i < request->limit(); ++i) {
      shop::v1::Item item;
      item.set_sku("sku-" + std::to_string(i));
      item.set_quantity(i);
      if (!writer->Write(item)) break;
    }
    return grpc::Status::OK;
  }

  std::atomic<int> get_item_runs{0};
  std::atomic<int> flaky_runs{0};
  std::atomic<int> list_items_runs{0};
  std::mutex mu;
  std::string retry_attempt_header;
};

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

std::string Describe(const grpc::Status& status) {
  static constexpr const char* kNames[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  std::string text = code >= 0 && code <= 16 ? kNames[code] : std::to_string(code);
  if (!status.error_message().empty()) text += " \"" + status.error_message() + "\"";
  return text;
}

}  // namespace

int main() {
  alarm(60);  // a hang is a failure, not a stuck CI job

  absl::StatusOr<resilience::PolicySet> server_policies =
      resilience::PolicySet::FromJsonString(kServerPolicies);
  absl::StatusOr<resilience::PolicySet> client_policies =
      resilience::PolicySet::FromJsonString(kClientPolicies);
  if (!server_policies.ok() || !client_policies.ok()) {
    std::printf("FAIL policies: %s / %s\n", server_policies.status().ToString().c_str(),
                client_policies.status().ToString().c_str());
    return 1;
  }
  Check(server_policies->warnings().empty() && client_policies->warnings().empty(),
        "policies load", "no warnings");

  // Server: our interceptors around the application's own, the service
  // behind the guard.
  CallCounter server_counter;
  InventoryService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &port);
  resilience::ServerResilienceOptions server_options;
  auto events = std::make_shared<ThrottleEventLog>();
  server_options.events = events;
  server_options.outer_interceptors.push_back(
      std::make_unique<CountingServerFactory>(&server_counter));
  std::shared_ptr<resilience::ServerResilience> server_resilience =
      resilience::AddServerInterceptors(builder, *server_policies, std::move(server_options));
  Check(server_resilience->warnings().empty(), "server resilience warnings",
        "none, as the policies loaded");
  absl::Status guarded =
      server_resilience->RegisterGuardedService<shop::v1::Inventory>(builder, &service);
  if (!guarded.ok()) {
    std::printf("FAIL RegisterGuardedService: %s\n", guarded.ToString().c_str());
    return 1;
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::printf("FAIL server: cannot listen on localhost:0\n");
    return 1;
  }
  // The health service (ServerResilienceOptions::health, on by default):
  // SERVING once the application says it is ready.
  Check(server_resilience->SetServing(*server, true), "health service",
        "SetServing() finds the server's grpc.health.v1 service");

  // Client: the application's interceptors outside (each call once) and
  // inside (each attempt) ours.
  CallCounter client_outer_counter;
  CallCounter client_inner_counter;
  resilience::ResilientChannelOptions channel_options;
  channel_options.outer_interceptors.push_back(
      std::make_unique<CountingClientFactory>(&client_outer_counter));
  channel_options.inner_interceptors.push_back(
      std::make_unique<CountingClientFactory>(&client_inner_counter));
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      "localhost:" + std::to_string(port), grpc::InsecureChannelCredentials(),
      *client_policies, std::move(channel_options));
  for (const std::string& warning : channel.warnings) {
    std::printf("     channel warning: %s\n", warning.c_str());
  }
  std::unique_ptr<shop::v1::Inventory::Stub> stub = shop::v1::Inventory::NewStub(channel.channel);

  // 1. One call succeeds.
  {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    shop::v1::GetItemRequest request;
    request.set_sku("apple");
    shop::v1::Item item;
    grpc::Status status = stub->GetItem(&context, request, &item);
    Check(status.ok() && item.sku() == "apple" && item.quantity() == 7, "unary call",
          "GetItem(apple) -> " + Describe(status) + ", quantity " +
              std::to_string(item.quantity()));
  }

  // 2. The first attempt fails with UNAVAILABLE, the retry succeeds.
  {
    const resilience::ClientMethodStats before = channel.resilience->Stats(kGetItem);
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    shop::v1::GetItemRequest request;
    request.set_sku("flaky");
    shop::v1::Item item;
    grpc::Status status = stub->GetItem(&context, request, &item);
    const resilience::ClientMethodStats after = channel.resilience->Stats(kGetItem);
    std::string header;
    {
      std::lock_guard<std::mutex> lock(service.mu);
      header = service.retry_attempt_header;
    }
    Check(status.ok() && after.retries - before.retries >= 1 && service.flaky_runs.load() == 2,
          "retry",
          "GetItem(flaky) -> " + Describe(status) + " after " +
              std::to_string(service.flaky_runs.load()) + " attempts on the server; client "
              "stats: calls " + std::to_string(after.calls) + ", attempts " +
              std::to_string(after.attempts) + ", retries " + std::to_string(after.retries) +
              "; x-retry-attempt \"" + header + "\"");
  }
  {
    const std::vector<resilience::EndpointBreakerStats> endpoints =
        channel.resilience->EndpointStats(kGetItem);
    Check(endpoints.size() == 1 && endpoints[0].outcomes >= 2 &&
              endpoints[0].breaker.state == resilience::BreakerState::kClosed,
          "endpoint breakers",
          std::to_string(endpoints.size()) + " endpoint(s)" +
              (endpoints.empty() ? std::string()
                                 : ", " + endpoints[0].endpoint + " with " +
                                       std::to_string(endpoints[0].outcomes) + " outcomes"));
  }

  // 3. A burst against the rate limit: one call admitted, the rest rejected
  //    with RESOURCE_EXHAUSTED before their handler.
  {
    std::vector<grpc::Status> statuses(kBurst);
    std::vector<int> received(kBurst, 0);
    std::vector<int> local(kBurst, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < kBurst; ++i) {
      threads.emplace_back([&, i] {
        grpc::ClientContext context;
        context.set_deadline(Deadline());
        shop::v1::ListItemsRequest request;
        request.set_limit(3);
        std::unique_ptr<grpc::ClientReader<shop::v1::Item>> reader =
            stub->ListItems(&context, request);
        shop::v1::Item item;
        while (reader->Read(&item)) ++received[i];
        statuses[i] = reader->Finish();
        local[i] = resilience::RejectedLocally(context);
      });
    }
    for (std::thread& thread : threads) thread.join();
    int ok = 0;
    int exhausted = 0;
    int rejected_with_messages = 0;
    int rejected_locally = 0;
    std::string first_rejection;
    for (int i = 0; i < kBurst; ++i) {
      if (statuses[i].ok() && received[i] == 3) ++ok;
      if (statuses[i].error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++exhausted;
        if (received[i] != 0) ++rejected_with_messages;
        if (local[i]) ++rejected_locally;
        if (first_rejection.empty()) first_rejection = Describe(statuses[i]);
      }
    }
    const resilience::ServerMethodStats stats = server_resilience->Stats(kListItems);
    Check(ok == 1 && exhausted == kBurst - 1 && rejected_with_messages == 0 &&
              rejected_locally == 0 && service.list_items_runs.load() == 1 &&
              stats.admitted == 1 && stats.rejected_rate == kBurst - 1 &&
              stats.rejected_concurrency == 0 && stats.rejected_cpu == 0,
          "throttle",
          std::to_string(kBurst) + " concurrent ListItems: " + std::to_string(ok) + " ok, " +
              std::to_string(exhausted) + " RESOURCE_EXHAUSTED (" + first_rejection +
              "), handler ran " + std::to_string(service.list_items_runs.load()) +
              " time(s); server stats: admitted " + std::to_string(stats.admitted) +
              ", rejected_rate " + std::to_string(stats.rejected_rate));
  }

  // 4. Its events listener heard the throttle start rejecting, once for the
  //    burst (and not that it admits again: the bucket stays empty).
  Check(events->saturated() == 1 &&
            events->Text() ==
                "throttle /shop.v1.Inventory/ListItems (scope shop.v1.Inventory/ListItems): "
                "saturated (rate)",
        "events", events->Text());

  // 5. The application's own interceptors saw every call: the client's outer
  //    one each call once, its inner one each attempt, the server's every
  //    call that arrived (rejected ones too).
  {
    const int outer_get = client_outer_counter.Get(kGetItem);
    const int inner_get = client_inner_counter.Get(kGetItem);
    const int outer_list = client_outer_counter.Get(kListItems);
    const int server_get = server_counter.Get(kGetItem);
    const int server_list = server_counter.Get(kListItems);
    const int attempts = service.get_item_runs.load();  // 1 + 2
    Check(outer_get == 2 && outer_list == kBurst && inner_get == attempts &&
              server_get == attempts && server_list == kBurst,
          "own interceptors",
          "client outer GetItem " + std::to_string(outer_get) + " (2 calls), ListItems " +
              std::to_string(outer_list) + " (" + std::to_string(kBurst) +
              " calls); client inner GetItem " + std::to_string(inner_get) + " (" +
              std::to_string(attempts) + " attempts); server GetItem " +
              std::to_string(server_get) + ", ListItems " + std::to_string(server_list));
  }

  // 6. An operator forces GetItem's breaker open: the next call is rejected
  //    locally, and the status report (client, server) says so; back to
  //    automatic, calls go out again.
  {
    const absl::Status forced =
        channel.resilience->ControlBreaker(kGetItem, resilience::BreakerCommand::kForceOpen);
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    shop::v1::GetItemRequest request;
    request.set_sku("apple");
    shop::v1::Item item;
    const grpc::Status status = stub->GetItem(&context, request, &item);
    resilience::StatusReport report;
    channel.resilience->AppendStatus(report);
    server_resilience->AppendStatus(report, "inventory");
    const std::string json = report.ToJson();
    const bool shows_forced =
        json.find("\"mode\":\"force_open\"") != std::string::npos &&
        report.ToHtml().find("class=\"forced\"") != std::string::npos;
    // The endpoint GetItem's calls went to has its own breaker row and commands.
    absl::Status endpoint_reset = absl::NotFoundError("no endpoint row");
    for (const resilience::ClientMethodStatus& row : report.client_methods) {
      if (row.method != kGetItem || row.endpoints.empty()) continue;
      endpoint_reset = channel.resilience->ControlEndpointBreaker(
          kGetItem, row.endpoints[0].endpoint, resilience::BreakerCommand::kReset);
    }
    const absl::Status automatic =
        channel.resilience->ControlBreaker(kGetItem, resilience::BreakerCommand::kAutomatic);
    grpc::ClientContext again;
    again.set_deadline(Deadline());
    const grpc::Status after = stub->GetItem(&again, request, &item);
    Check(forced.ok() && resilience::RejectedLocally(context) && automatic.ok() && after.ok() &&
              shows_forced && !report.server_methods.empty() && endpoint_reset.ok(),
          "operations",
          "force_open -> " + forced.ToString() + ", next GetItem " + Describe(status) +
              (resilience::RejectedLocally(context) ? " (local)" : " (not local)") +
              "; automatic -> " + Describe(after) + "; status report " +
              std::to_string(report.client_methods.size()) + " client and " +
              std::to_string(report.server_methods.size()) + " server rows, forced shown: " +
              (shows_forced ? "yes" : "no") + "; endpoint reset -> " + endpoint_reset.ToString());
  }

  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  std::printf("%s\n", failures == 0 ? "all checks passed" : "some checks FAILED");
  return failures == 0 ? 0 : 1;
}
