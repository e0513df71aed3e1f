// Retried attempts against a server with throttle.retryShedding, from gRPC
// C++'s own retry (a service-config retryPolicy, no interceptors of ours)
// and from this library's client (CreateResilientChannel(), sync and
// callback stubs): the server sheds their retries as retries (gRPC's carry
// grpc-previous-rpc-attempts; ours reach it with x-retry-attempt, gRPC's
// retry filter removing the other header from each of our attempts), and
// both stop at the server's "do not retry" pushback (gRFC A6: a value that
// is not a non-negative integer).

#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cache_service {
namespace {

using ::testing::EndsWith;

constexpr char kGet[] = "/cache.v1.CacheService/Get";

// Up to 3 attempts 10 ms apart, RESOURCE_EXHAUSTED retryable: the same
// retryPolicy for gRPC's retry (service config) and for ours (policy).
constexpr char kRetryConfig[] = R"({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                  "backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]})";

// One Get per 10 s (the first takes the only token), pushbacks of at most
// 50 ms, and `retry_shedding` as the throttle's retryShedding.
std::string Policy(const std::string& retry_shedding) {
  return R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
      "throttle": {"ratePerSecond": 0.1, "burst": 1, "maxPushback": "0.05s",
                   "retryShedding": )" +
         retry_shedding + "}}]}";
}

enum class Client { kGrpc, kOursSync, kOursCallback };

class DoNotRetryTest : public ::testing::TestWithParam<Client> {
 protected:
  void Start(const std::string& policy_json) {
    CacheServer::Options options;
    absl::StatusOr<resilience::PolicySet> policies =
        resilience::PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    options.policies = *std::move(policies);
    absl::StatusOr<std::unique_ptr<CacheServer>> server = CacheServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_TRUE(server_->store().Store("k", "v").ok());
    if (GetParam() == Client::kGrpc) {
      grpc::ChannelArguments args;
      args.SetServiceConfigJSON(kRetryConfig);
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
      stub_ = cache::v1::CacheService::NewStub(grpc::CreateCustomChannel(
          server_->address(), grpc::InsecureChannelCredentials(), args));
    } else {
      absl::StatusOr<resilience::PolicySet> client_policies =
          resilience::PolicySet::FromJsonString(kRetryConfig);
      ASSERT_TRUE(client_policies.ok()) << client_policies.status();
      ours_ = resilience::CreateResilientChannel(
          server_->address(), grpc::InsecureChannelCredentials(), *client_policies);
      stub_ = cache::v1::CacheService::NewStub(ours_.channel);
    }
  }

  grpc::Status Get() {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    cache::v1::GetReq request;
    request.set_key("k");
    cache::v1::GetResp response;
    if (GetParam() != Client::kOursCallback) return stub_->Get(&context, request, &response);
    grpc::Status status;
    absl::Notification done;
    stub_->async()->Get(&context, &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(15)));
    return status;
  }

  resilience::ServerMethodStats ServerStats() const { return server_->resilience().Stats(kGet); }

  std::unique_ptr<CacheServer> server_;
  resilience::ResilientChannel ours_;
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
};

// Retries are never admitted (retryShare 0): the call's first attempt is
// refused by the rate limit, its two retries as retries. This shows the
// client sent grpc-previous-rpc-attempts and the server read it.
TEST_P(DoNotRetryTest, TheClientsRetriesAreShedAsRetries) {
  Start(Policy(R"({"retryShare": 0})"));
  ASSERT_TRUE(Get().ok());  // the token
  grpc::Status s = Get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "/cache.v1.CacheService/Get: rate limit 0.1/s reached for retried CRITICAL calls "
            "(share 0)");
  const resilience::ServerMethodStats stats = ServerStats();
  EXPECT_EQ(stats.rejected_rate, 1);
  EXPECT_EQ(stats.rejected_retry, 2);
  EXPECT_EQ(stats.admitted, 1);
  if (GetParam() != Client::kGrpc) {
    EXPECT_EQ(ours_.resilience->Stats(kGet).attempts, 1 + 3);
  }
}

// doNotRetry: the first rejection ends the call, with no retry.
TEST_P(DoNotRetryTest, TheClientStopsAtDoNotRetry) {
  Start(Policy(R"({"doNotRetry": true})"));
  ASSERT_TRUE(Get().ok());
  grpc::Status s = Get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), EndsWith("/cache.v1.CacheService/Get: rate limit 0.1/s reached"));
  const resilience::ServerMethodStats stats = ServerStats();
  EXPECT_EQ(stats.rejected_rate, 1);
  EXPECT_EQ(stats.rejected_retry, 0);
  if (GetParam() != Client::kGrpc) {
    EXPECT_EQ(ours_.resilience->Stats(kGet).attempts, 1 + 1);
    EXPECT_EQ(ours_.resilience->Stats(kGet).pushback_stops, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Clients, DoNotRetryTest,
                         ::testing::Values(Client::kGrpc, Client::kOursSync,
                                           Client::kOursCallback),
                         [](const ::testing::TestParamInfo<Client>& info) {
                           switch (info.param) {
                             case Client::kGrpc:
                               return "GrpcRetryPolicy";
                             case Client::kOursSync:
                               return "OursSync";
                             default:
                               return "OursCallback";
                           }
                         });

}  // namespace
}  // namespace cache_service
