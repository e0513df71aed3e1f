// The server's throttle under throttle.retryShedding over real channels:
// attempts carrying grpc-previous-rpc-attempts >= 1 are shed before first
// attempts of the same level, counted as rejected_retry (cause="retry"),
// and doNotRetry answers with gRFC A6's "do not retry" pushback.

#include <string>

#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/status_report.h"
#include "gtest/gtest.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPreviousAttempts[] = "grpc-previous-rpc-attempts";

// A stub whose calls carry the grpc-previous-rpc-attempts they are given:
// with gRPC's retries on (its default), its retry filter removes the header
// from a first attempt, so an application cannot send it; a client that
// retries by itself (this library's) switches them off.
std::unique_ptr<cache::v1::CacheService::Stub> RetryingStub(const TestServer& server) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return cache::v1::CacheService::NewStub(server.NewChannel({}, args));
}

// Get limited to 4 at once; a retried attempt may take 2 (share 1 x 0.5).
constexpr char kRetryShedding[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 4, "retryShedding": {}}}]})";

TEST_P(ServerInterceptorsTest, RetriedAttemptsAreShedBeforeFirstAttempts) {
  Start(kRetryShedding);
  const auto stub = RetryingStub(*server_);
  StartGet("gated");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  std::string pushback;
  grpc::Status retry = GetWithHeader(*stub, kPreviousAttempts, "1", &pushback);
  EXPECT_EQ(retry.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(retry.error_message(),
            "/cache.v1.CacheService/Get: concurrency limit 4 reached for retried CRITICAL calls "
            "(2 of 4 slots)");
  EXPECT_THAT(pushback, Not(HasSubstr("-"))) << "a delay without doNotRetry";
  EXPECT_FALSE(pushback.empty());
  // A first attempt ("0", a value that counts nothing, or no header) still
  // gets the whole limit.
  EXPECT_TRUE(GetWithHeader(*stub, kPreviousAttempts, "0").ok());
  EXPECT_TRUE(GetWithHeader(*stub, kPreviousAttempts, "x").ok());
  EXPECT_TRUE(GetWithHeader(*stub, "x-other", "1").ok());
  StartGet("gated");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 4; }));
  grpc::Status first = GetWithHeader(*stub, "x-other", "1");
  EXPECT_EQ(first.error_message(), "/cache.v1.CacheService/Get: concurrency limit 4 reached");
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_retry, 1);
  EXPECT_EQ(stats.rejected_concurrency, 1);
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(), HasSubstr("grpc_resilience_server_rejections_total{grpc_method=\""
                                       "/cache.v1.CacheService/Get\",cause=\"retry\"} 1"));
  StatusReport report;
  state_->AppendStatus(report);
  EXPECT_THAT(report.ToJson(), HasSubstr("\"rejected\":2,\"rejected_retries\":1"));
}

// This library's client sends x-retry-attempt beside grpc-previous-rpc-
// attempts, and gRPC's retry filter removes the latter from each of its
// attempts: the former alone marks a retry too.
TEST_P(ServerInterceptorsTest, XRetryAttemptMarksARetryToo) {
  Start(kRetryShedding);
  StartGet("gated");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  EXPECT_EQ(GetWithHeader(*stub_, "x-retry-attempt", "2").error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(GetWithHeader(*stub_, "x-retry-attempt", "0").ok());
  EXPECT_EQ(state_->Stats(kGet).rejected_retry, 1);
}

// Without retryShedding a retried attempt is a call like any other, and
// no cause="retry" series is shown.
TEST_P(ServerInterceptorsTest, RetriesAreFirstAttemptsWithoutRetryShedding) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 4}}]})");
  const auto stub = RetryingStub(*server_);
  StartGet("gated");
  StartGet("gated");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  EXPECT_TRUE(GetWithHeader(*stub, kPreviousAttempts, "2").ok());
  EXPECT_EQ(state_->Stats(kGet).rejected_retry, 0);
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(), Not(HasSubstr("cause=\"retry\"")));
}

// doNotRetry: every rejection of the scope, first attempt or retry, by
// concurrency or rate, carries "-1" instead of a delay.
TEST_P(ServerInterceptorsTest, DoNotRetryAnswersWithANegativePushback) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 1, "retryShedding": {"doNotRetry": true}}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
     "throttle": {"ratePerSecond": 0.001, "burst": 1,
                  "retryShedding": {"retryShare": 1, "doNotRetry": true}}}]})");
  const auto stub = RetryingStub(*server_);
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  for (const char* previous : {"", "1"}) {
    std::string pushback;
    EXPECT_EQ(GetWithHeader(*stub, kPreviousAttempts, previous, &pushback).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(pushback, "-1") << "previous attempts: \"" << previous << "\"";
  }
  EXPECT_TRUE(Store().ok());  // the bucket's one token
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
  cache::v1::StoreReq request;
  cache::v1::StoreResp response;
  EXPECT_EQ(stub_->Store(&context, request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  const auto found = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
  ASSERT_NE(found, context.GetServerTrailingMetadata().end());
  EXPECT_EQ(std::string(found->second.data(), found->second.size()), "-1");
}

// Instantiated for both APIs in server_interceptors_test.cc.

}  // namespace
}  // namespace resilience::testing
