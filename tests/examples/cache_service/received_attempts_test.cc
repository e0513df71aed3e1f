// ReceivedAttempts: what a server counts of the attempts it receives, alone
// and in a CacheServer called through gRPC's own retry.

#include "examples/cache_service/received_attempts.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/cache_server.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace cache_service {
namespace {

using ::testing::HasSubstr;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr char kStore[] = "/cache.v1.CacheService/Store";

bool IsRetry(std::multimap<std::string, std::string> headers) {
  std::multimap<grpc::string_ref, grpc::string_ref> metadata;
  for (const auto& [key, value] : headers) metadata.emplace(key, value);
  return ReceivedAttempts::IsRetry(metadata);
}

TEST(ReceivedAttemptsTest, ARetryCarriesACountOfEarlierAttemptsAboveZero) {
  EXPECT_FALSE(IsRetry({}));
  EXPECT_FALSE(IsRetry({{"grpc-previous-rpc-attempts", "0"}}));
  EXPECT_TRUE(IsRetry({{"grpc-previous-rpc-attempts", "1"}}));
  EXPECT_TRUE(IsRetry({{"x-retry-attempt", "2"}}));
  EXPECT_FALSE(IsRetry({{"x-retry-attempt", "two"}}));
  EXPECT_FALSE(IsRetry({{"grpc-previous-rpc-attempts", "-1"}}));
  EXPECT_FALSE(IsRetry({{"other", "3"}}));
}

TEST(ReceivedAttemptsTest, CountsPerMethodAndBoundsTheNames) {
  ReceivedAttempts counts;
  EXPECT_EQ(counts.Render(), "");
  counts.Count(kGet, false);
  counts.Count(kGet, true);
  for (size_t i = 0; i < ReceivedAttempts::kMaxMethods + 5; ++i) {
    counts.Count(absl::StrCat("/m/", i), false);
  }
  const std::map<std::string, ReceivedAttempts::Counts> snapshot = counts.Snapshot();
  EXPECT_EQ(snapshot.size(), ReceivedAttempts::kMaxMethods + 1);  // + "other"
  EXPECT_EQ(snapshot.at(kGet).attempts, 2);
  EXPECT_EQ(snapshot.at(kGet).retries, 1);
  EXPECT_EQ(snapshot.at("other").attempts, 6);
  const std::string text = counts.Render();
  EXPECT_THAT(text, HasSubstr(absl::StrCat("cache_server_attempts_received_total{grpc_method=\"",
                                           kGet, "\"} 2\n")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("cache_server_retries_received_total{grpc_method=\"",
                                           kGet, "\"} 1\n")));
}

// A server failing every Get UNAVAILABLE, called through gRPC's own retry
// (3 attempts): it receives three Gets, two of them retries, and one Store.
TEST(ReceivedAttemptsTest, ACacheServerCountsTheRetriesOfGrpcsOwnRetry) {
  CacheServer::Options options;
  absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(R"({
      "methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                        "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}},
                       {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
                        "throttle": {"maxConcurrency": 100}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  options.policies = *std::move(policies);
  auto counts = std::make_shared<ReceivedAttempts>();
  options.received_attempts = counts;
  absl::StatusOr<std::unique_ptr<CacheServer>> server = CacheServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();

  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"methodConfig": [{
      "name": [{"service": "cache.v1.CacheService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateCustomChannel((*server)->address(), grpc::InsecureChannelCredentials(), args));
  std::string value;
  EXPECT_EQ(GetValue(*stub, "k", &value, absl::Seconds(10)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(StoreValue(*stub, "k", "v", absl::Seconds(10)).ok());
  const std::map<std::string, ReceivedAttempts::Counts> snapshot = counts->Snapshot();
  ASSERT_EQ(snapshot.count(kGet), 1u);
  EXPECT_EQ(snapshot.at(kGet).attempts, 3);
  EXPECT_EQ(snapshot.at(kGet).retries, 2);
  ASSERT_EQ(snapshot.count(kStore), 1u);
  EXPECT_EQ(snapshot.at(kStore).attempts, 1);
  EXPECT_EQ(snapshot.at(kStore).retries, 0);
  (*server)->Shutdown(absl::ZeroDuration());
  (*server)->Wait();
}

}  // namespace
}  // namespace cache_service
