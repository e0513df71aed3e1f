// The cache service over a real gRPC channel, in process (tests/testing's
// TestServer), plus the load generator against it.

#include "examples/cache_service/cache_service_impl.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/load_generator.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/test_server.h"

namespace cache_service {
namespace {

using ::resilience::testing::TestServer;
using ::testing::HasSubstr;

class CacheServiceTest : public ::testing::Test {
 protected:
  CacheServiceTest() : store_(StoreOptions()), service_(&store_) {
    TestServer::Options options;
    options.services.push_back(&service_);
    server_ = TestServer::Start(std::move(options));
    stub_ = cache::v1::CacheService::NewStub(server_->NewChannel());
  }

  static CacheStore::Options StoreOptions() {
    CacheStore::Options options;
    options.max_entries = 1000;
    options.max_value_bytes = 4096;
    return options;
  }

  grpc::Status Store(const std::string& key, const std::string& value) {
    return StoreValue(*stub_, key, value, absl::Seconds(10));
  }
  grpc::Status Get(const std::string& key, std::string* value) {
    return GetValue(*stub_, key, value, absl::Seconds(10));
  }

  CacheStore store_;
  CacheServiceImpl service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
};

// Store then Get returns the value; statuses map from the store's errors.
TEST_F(CacheServiceTest, RoundTripAndErrorCodes) {
  ASSERT_NE(server_, nullptr);
  std::string value;
  ASSERT_TRUE(Store("k", "v").ok());
  ASSERT_TRUE(Get("k", &value).ok());
  EXPECT_EQ(value, "v");

  grpc::Status missing = Get("absent", &value);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(missing.error_message(), HasSubstr("absent"));
  EXPECT_EQ(Get("", &value).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Store("", "v").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status big = Store("big", std::string(5000, 'x'));
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(big.error_message(), HasSubstr("5000 bytes, over the limit of 4096"));
}

// Dump streams every entry in key order.
TEST_F(CacheServiceTest, DumpStreamsAllEntriesInKeyOrder) {
  for (int i = 99; i >= 0; --i) ASSERT_TRUE(Store(absl::StrCat("key", 1000 + i), "v").ok());
  grpc::ClientContext context;
  auto reader = stub_->Dump(&context, cache::v1::DumpReq());
  cache::v1::DumpItem item;
  std::vector<std::string> keys;
  while (reader->Read(&item)) keys.push_back(item.key());
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(keys.size(), 100u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

// The load generator makes exactly the calls asked for and accounts for each
// by status code; with a seed the mix is repeatable.
TEST_F(CacheServiceTest, LoadGeneratorCountsEveryCall) {
  LoadOptions options;
  options.calls = 300;
  options.concurrency = 3;
  options.key_space = 20;
  options.get_fraction = 0.5;
  ASSERT_TRUE(ValidateLoadOptions(options).ok());
  LoadReport report = RunLoad(*stub_, options);
  EXPECT_EQ(report.calls, 300);
  int64_t total = 0;
  for (int64_t n : report.by_code) total += n;
  EXPECT_EQ(total, 300);
  EXPECT_EQ(report.count(grpc::StatusCode::OK) + report.count(grpc::StatusCode::NOT_FOUND), 300);
  EXPECT_GT(report.count(grpc::StatusCode::OK), 0);
  EXPECT_LE(report.Percentile(0.5), report.Percentile(0.99));
  EXPECT_LE(report.Percentile(0.99), report.Percentile(1.0));
  EXPECT_THAT(report.Format(), HasSubstr("calls: 300"));
}

// Bad load options are refused, naming the field.
TEST(LoadOptionsTest, ValidationNamesTheField) {
  LoadOptions o;
  o.concurrency = 0;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("concurrency"));
  o = LoadOptions();
  o.calls = 0;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("at least one"));
  o.duration = absl::Milliseconds(10);
  EXPECT_TRUE(ValidateLoadOptions(o).ok());
  o.get_fraction = 1.5;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("get_fraction"));
}

// Percentiles use the nearest rank.
TEST(LoadReportTest, NearestRankPercentiles) {
  LoadReport report;
  for (int i = 1; i <= 100; ++i) report.sorted_latencies.push_back(absl::Milliseconds(i));
  EXPECT_EQ(report.Percentile(0.5), absl::Milliseconds(50));
  EXPECT_EQ(report.Percentile(0.99), absl::Milliseconds(99));
  EXPECT_EQ(report.Percentile(1.0), absl::Milliseconds(100));
  EXPECT_EQ(report.Percentile(0.0), absl::Milliseconds(1));
  EXPECT_EQ(LoadReport().Percentile(0.5), absl::ZeroDuration());
}

// CacheServer refuses bad options with the field named, and binds a free port.
TEST(CacheServerTest, StartValidatesAndBinds) {
  CacheServer::Options options;
  options.port = 70000;
  EXPECT_THAT(CacheServer::Start(options).status().message(), HasSubstr("port"));
  options.port = 0;
  options.store.max_entries = 0;
  EXPECT_THAT(CacheServer::Start(options).status().message(), HasSubstr("max_entries"));
  options.store.max_entries = 10;
  absl::StatusOr<std::unique_ptr<CacheServer>> server = CacheServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->address(), absl::StrCat("127.0.0.1:", (*server)->port()));
  EXPECT_EQ(JoinHostPort("::1", 5), "[::1]:5");
}

// CacheServer applies its policies with the server interceptors: an abort
// injected on Get reaches the client, Store is untouched, and the handler
// did no work for the aborted calls.
TEST(CacheServerTest, AppliesServerPolicies) {
  CacheServer::Options options;
  absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(R"({
    "methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                      "faultInjection": {"abortCode": "UNAVAILABLE"}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  options.policies = *std::move(policies);
  absl::StatusOr<std::unique_ptr<CacheServer>> server = CacheServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext store_context;
  cache::v1::StoreReq store;
  store.set_key("k");
  cache::v1::StoreResp store_response;
  EXPECT_TRUE(stub->Store(&store_context, store, &store_response).ok());
  grpc::ClientContext get_context;
  cache::v1::GetReq get;
  get.set_key("k");
  cache::v1::GetResp get_response;
  grpc::Status status = stub->Get(&get_context, get, &get_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("fault injected"));
  EXPECT_EQ((*server)->resilience().Stats("/cache.v1.CacheService/Get").faults_aborted, 1);
}

}  // namespace
}  // namespace cache_service
