// File: tests/prometheus_cpp/resilient_cache.h
//
// A cache service in this process with the library on both sides, as a
// service that exposes its metrics with prometheus-cpp would have it: a
// guarded server (ServerResilience: throttle, injected aborts) on
// localhost:0 and a resilient channel to it (ClientResilience: retries, a
// breaker), after a fixed set of calls. For the tests of
// PrometheusCollectable (tests/prometheus_cpp/).
//
// Example:
//   ResilientCache cache;
//   ASSERT_TRUE(cache.Start());
//   cache.MakeCalls(20);
//   PrometheusCollectable collectable([&](PrometheusText& text) { cache.AppendMetrics(text); });

#ifndef GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_RESILIENT_CACHE_H_
#define GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_RESILIENT_CACHE_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/cache_store.h"
#include "grpc_resilience/client.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/server.h"
#include "grpcpp/security/credentials.h"
#include "tests/testing/guarded_server.h"

namespace resilience::testing {

class ResilientCache {
 public:
  // Every Get and Store: a concurrency limit; a fifth of them aborted
  // UNAVAILABLE (seeded), so that some calls retry and some fail.
  static constexpr char kServerPolicy[] = R"({"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService", "method": "Get"},
             {"service": "cache.v1.CacheService", "method": "Store"}],
    "throttle": {"maxConcurrency": 64},
    "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 0.2, "seed": 7}}]})";
  // Retries of UNAVAILABLE, a timeout and a three-state breaker that stays
  // closed at this failure rate.
  static constexpr char kClientPolicy[] = R"({"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService", "method": "Get"},
             {"service": "cache.v1.CacheService", "method": "Store"}],
    "timeout": "10s",
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.01s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    "breaker": {"threeState": {"failureRateThreshold": 0.9, "minRequests": 1000,
                               "window": "10s", "buckets": 10, "openDuration": "1s"}}}]})";

  ResilientCache() : store_(cache_service::CacheStore::Options{}), service_(&store_) {}

  // Start()
  //
  // The server and the channel (connected); false, and a test failure, if
  // either could not be made.
  bool Start() {
    absl::StatusOr<PolicySet> server_policies = PolicySet::FromJsonString(kServerPolicy);
    absl::StatusOr<PolicySet> client_policies = PolicySet::FromJsonString(kClientPolicy);
    EXPECT_TRUE(server_policies.ok()) << server_policies.status();
    EXPECT_TRUE(client_policies.ok()) << client_policies.status();
    if (!server_policies.ok() || !client_policies.ok()) return false;
    GuardedServer started = StartGuardedServer<cache::v1::CacheService>(
        *std::move(server_policies), &service_);
    server_resilience_ = started.resilience;
    server_ = std::move(started.server);
    EXPECT_NE(server_, nullptr);
    if (server_ == nullptr) return false;
    ResilientChannelOptions options;
    options.resilience.name = "cache";
    made_ = CreateResilientChannel(server_->address(), grpc::InsecureChannelCredentials(),
                                   *client_policies, std::move(options));
    stub_ = cache::v1::CacheService::NewStub(made_.channel);
    const bool connected =
        made_.channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    EXPECT_TRUE(connected) << "no connection to " << server_->address();
    return connected;
  }

  ~ResilientCache() {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  // MakeCalls()
  //
  // `n` Stores and `n` Gets of the stored keys and of missing ones
  // (NOT_FOUND), one at a time.
  void MakeCalls(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string key = absl::StrCat("key-", i);
      grpc::ClientContext store_context;
      cache::v1::StoreReq store;
      store.set_key(key);
      store.set_value("v");
      cache::v1::StoreResp stored;
      (void)stub_->Store(&store_context, store, &stored);
      grpc::ClientContext get_context;
      cache::v1::GetReq get;
      get.set_key(i % 2 == 0 ? key : absl::StrCat("missing-", i));
      cache::v1::GetResp got;
      (void)stub_->Get(&get_context, get, &got);
    }
  }

  // AppendMetrics()
  //
  // The client's and the server's metrics, into `text`.
  void AppendMetrics(PrometheusText& text) const {
    made_.resilience->AppendMetrics(text);
    server_resilience_->AppendMetrics(text);
  }

  ClientResilience& client() { return *made_.resilience; }
  ServerResilience& server() { return *server_resilience_; }

 private:
  cache_service::CacheStore store_;
  cache_service::CacheServiceImpl service_;
  std::shared_ptr<ServerResilience> server_resilience_;
  std::unique_ptr<TestServer> server_;
  ResilientChannel made_;
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_RESILIENT_CACHE_H_
