// The server's throttle judging calls by their resilience-criticality
// header over real channels: lower levels shed first under a concurrency
// limit, the method's ceiling and default, bad values, the counters and
// metrics per level.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpc_resilience/criticality.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kShed = CriticalityIndex(Criticality::kSheddable);
constexpr int kCrit = CriticalityIndex(Criticality::kCritical);
constexpr int kShedPlus = CriticalityIndex(Criticality::kSheddablePlus);

// Get limited to 4 at once; SHEDDABLE may take 2 (default shares).
constexpr char kGetConcurrency4[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 4}}]})";

grpc::Status GetWith(cache::v1::CacheService::Stub& stub, const std::string& criticality) {
  return GetWithHeader(stub, "resilience-criticality", criticality);
}

TEST_P(ServerInterceptorsTest, SheddableIsShedBeforeCritical) {
  Start(kGetConcurrency4);
  StartGet("gated", kLong, "SHEDDABLE");
  StartGet("gated", kLong, "SHEDDABLE");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  // SHEDDABLE's 2 of 4 slots are taken; SHEDDABLE_PLUS may take a third.
  grpc::Status shed = GetWith(*stub_, "SHEDDABLE");
  EXPECT_EQ(shed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(shed.error_message(),
            "/cache.v1.CacheService/Get: concurrency limit 4 reached for SHEDDABLE calls "
            "(2 of 4 slots)");
  StartGet("gated", kLong, "SHEDDABLE_PLUS");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  EXPECT_EQ(GetWith(*stub_, "SHEDDABLE_PLUS").error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A call without a header is CRITICAL: the whole limit, as before.
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 4; }));
  grpc::Status critical = GetWith(*stub_, "");
  EXPECT_EQ(critical.error_message(), "/cache.v1.CacheService/Get: concurrency limit 4 reached");
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_concurrency, 3);
  EXPECT_EQ(stats.rejected_by_criticality[kShed], 1);
  EXPECT_EQ(stats.rejected_by_criticality[kShedPlus], 1);
  EXPECT_EQ(stats.rejected_by_criticality[kCrit], 1);
  EXPECT_EQ(stats.criticality_invalid, 0);
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(),
              HasSubstr("grpc_resilience_server_rejections_by_criticality_total{grpc_method=\""
                        "/cache.v1.CacheService/Get\",criticality=\"SHEDDABLE\"} 1"));
}

// A header cannot raise a call above the method's ceiling; the default
// applies without a header and to a value that names no level (counted),
// never the highest level.
TEST_P(ServerInterceptorsTest, CeilingAndDefaultBoundWhatAHeaderClaims) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "criticality": {"default": "SHEDDABLE", "ceiling": "SHEDDABLE_PLUS"},
     "throttle": {"maxConcurrency": 4}}]})");
  StartGet("gated");  // no header: SHEDDABLE
  StartGet("gated", kLong, "critical");  // not a level: SHEDDABLE
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  for (const std::string& junk :
       std::vector<std::string>{"", "CRITICAL-PLUS", "critical_plus", std::string(4000, 'C')}) {
    EXPECT_EQ(GetWith(*stub_, junk).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << junk;
  }
  // CRITICAL_PLUS is lowered to the ceiling, SHEDDABLE_PLUS: 3 of 4 slots.
  StartGet("gated", kLong, "CRITICAL_PLUS");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  grpc::Status plus = GetWith(*stub_, "CRITICAL_PLUS");
  EXPECT_EQ(plus.error_message(),
            "/cache.v1.CacheService/Get: concurrency limit 4 reached for SHEDDABLE_PLUS calls "
            "(3 of 4 slots)");
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.criticality_invalid, 4);  // "critical" and three of the four junk values
  EXPECT_EQ(stats.rejected_by_criticality[kShed], 4);
  EXPECT_EQ(stats.rejected_by_criticality[kShedPlus], 1);
  EXPECT_EQ(stats.rejected_by_criticality[CriticalityIndex(Criticality::kCriticalPlus)], 0);
}

// Without any header the metrics are as before: no criticality series.
TEST_P(ServerInterceptorsTest, NoCriticalitySeriesWithoutTheHeader) {
  Start(kGetConcurrency4);
  EXPECT_TRUE(Get("fast").ok());
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(), Not(HasSubstr("criticality=")));
  EXPECT_THAT(text.Finish(), Not(HasSubstr("grpc_resilience_server_criticality_invalid_total{")));
}

// The public API: SetCriticality() sends the level, CriticalityOf() and
// PropagateCriticality() read a server call's claim.
TEST(CriticalityApiTest, SetAndPropagate) {
  grpc::ClientContext context;
  SetCriticality(context, Criticality::kSheddablePlus);
  // A ClientContext shows what it sends only to interceptors; a server
  // context built by gRPC is needed for the rest (tested end to end above
  // through the throttle, and in tests/consumer).
  grpc::ServerContext server_context;
  EXPECT_EQ(CriticalityOf(server_context), std::nullopt);
  grpc::ClientContext downstream;
  EXPECT_FALSE(PropagateCriticality(server_context, downstream));
}

}  // namespace
}  // namespace resilience::testing
