// Shadow mode of the server's throttle over real channels on localhost:0
// (sync and callback APIs): a shadow throttle lets every call through while
// counting what it would have rejected (stats, metrics, status), keeps its
// own state as if it had rejected them, and switches to enforce at runtime
// through SetEnforcement() or an Update() that changes only `enforcement`,
// its limits keeping their state.

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/status_report.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;

std::string GetPolicy(const std::string& throttle) {
  return absl::StrCat(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": )",
                      throttle, "}]}");
}

PolicySet Load(const std::string& json) {
  absl::StatusOr<PolicySet> p = PolicySet::FromJsonString(json);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : PolicySet();
}

std::string Metrics(ServerResilience& resilience) {
  PrometheusText text;
  resilience.AppendMetrics(text);
  return text.Finish();
}

const ServerMethodStatus* Row(const StatusReport& report, const std::string& method) {
  for (const ServerMethodStatus& row : report.server_methods) {
    if (row.method == method) return &row;
  }
  return nullptr;
}

class ShadowServerTest : public ServerInterceptorsTest {};

TEST_P(ShadowServerTest, ShadowConcurrencyLimitLetsEveryCallThroughUntilSetToEnforce) {
  Start(GetPolicy(R"({"maxConcurrency": 2, "enforcement": "shadow"})"));
  StartGet("gated");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  // Over the limit: let through, counted.
  for (int i = 0; i < 3; ++i) StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 5; }));
  std::string pushback = "none";
  EXPECT_TRUE(GetWithHeader(*stub_, "x", "", &pushback).ok());
  EXPECT_EQ(pushback, "none");  // a shadow rejection carries no pushback
  ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.shadow_throttle, 4);
  EXPECT_EQ(stats.rejected_concurrency, 0);
  EXPECT_EQ(stats.admitted, 6);
  EXPECT_THAT(Metrics(*state_),
              HasSubstr("grpc_resilience_server_shadow_rejections_total{grpc_method=\""
                        "/cache.v1.CacheService/Get\",policy=\"throttle\"} 4"));
  StatusReport report;
  state_->AppendStatus(report, "cache");
  const ServerMethodStatus* row = Row(report, kGet);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->enforcement, "throttle: shadow");
  EXPECT_EQ(row->shadow_rejected, 4);
  EXPECT_THAT(report.ToJson(), HasSubstr("\"enforcement\":\"throttle: shadow\""));

  // Enforced now: the shadow calls held no slot, the first two still do.
  ASSERT_TRUE(state_->SetEnforcement(kGet, EnforcedPolicy::kThrottle, EnforcementMode::kEnforce)
                  .ok());
  const grpc::Status refused = GetWithHeader(*stub_, "x", "", &pushback);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(), "/cache.v1.CacheService/Get: concurrency limit 2 reached");
  EXPECT_NE(pushback, "none");
  EXPECT_EQ(state_->Stats(kGet).rejected_concurrency, 1);
  EXPECT_EQ(state_->Stats(kGet).shadow_throttle, 4);
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 0; }));
  ASSERT_TRUE(Eventually([&] { return Get("fast").ok(); }));
}

TEST_P(ShadowServerTest, UpdateSwitchesModesInPlaceAndKeepsAnOperatorsMode) {
  SimulatedClock clock;  // never advances: the bucket's tokens are its burst
  const std::string shadow = GetPolicy(R"({"ratePerSecond": 1, "burst": 3,
                                           "enforcement": "shadow"})");
  const std::string enforce = GetPolicy(R"({"ratePerSecond": 1, "burst": 3,
                                            "enforcement": "enforce"})");
  Start(shadow, clock);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(state_->Stats(kGet).shadow_throttle, 7);
  // Only `enforcement` changed: the same bucket, still empty (a new one
  // would hold 3 tokens).
  ASSERT_TRUE(state_->Update(Load(enforce)).ok());
  EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(state_->Stats(kGet).rejected_rate, 1);
  // The operator's shadow outlives an update that leaves `enforcement` be.
  ASSERT_TRUE(state_->SetEnforcement("cache.v1.CacheService/Get", EnforcedPolicy::kThrottle,
                                     EnforcementMode::kShadow)
                  .ok());
  ASSERT_TRUE(state_->Update(Load(enforce)).ok());
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(state_->Stats(kGet).shadow_throttle, 8);
  // A file that changes it wins: off counts nothing.
  ASSERT_TRUE(state_->Update(Load(GetPolicy(R"({"ratePerSecond": 1, "burst": 3,
                                                "enforcement": "off"})")))
                  .ok());
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(state_->Stats(kGet).shadow_throttle, 8);
  EXPECT_EQ(state_->Stats(kGet).rejected_rate, 1);
}

// perCaller in shadow, the method's own rate enforced: a tenant over its
// own rate is served and counted; the enforcing limit after it still
// judges (and takes a token for) every call.
TEST_P(ShadowServerTest, ShadowPerCallerLimitIsJudgedBeforeTheEnforcingRate) {
  SimulatedClock clock;  // never advances: the buckets' tokens are their burst
  Start(GetPolicy(R"({"ratePerSecond": 1, "burst": 4,
                      "perCaller": {"key": {"header": "x-tenant-id"}, "ratePerSecond": 1,
                                    "burst": 2, "enforcement": "shadow"}})"),
        clock);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(GetWithHeader(*stub_, "x-tenant-id", "a").ok());
  EXPECT_EQ(state_->Stats(kGet).shadow_per_caller, 2);
  // The method's bucket took a token for each of the four: empty now.
  EXPECT_EQ(GetWithHeader(*stub_, "x-tenant-id", "b").error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_rate, 1);
  EXPECT_EQ(stats.shadow_per_caller, 2);
  EXPECT_EQ(stats.shadow_throttle, 0);
  EXPECT_THAT(Metrics(*state_),
              HasSubstr("grpc_resilience_server_shadow_rejections_total{grpc_method=\""
                        "/cache.v1.CacheService/Get\",policy=\"perCaller\"} 2"));
}

TEST_P(ShadowServerTest, SetEnforcementSaysWhatIsWrong) {
  Start(GetPolicy(R"({"maxConcurrency": 2})"));
  absl::Status s =
      state_->SetEnforcement(kGet, EnforcedPolicy::kBreaker, EnforcementMode::kShadow);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("breaker is a client policy"));
  EXPECT_THAT(s.message(), HasSubstr(kGet));
  s = state_->SetEnforcement(kStore, EnforcedPolicy::kThrottle, EnforcementMode::kShadow);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "SetEnforcement(\"/cache.v1.CacheService/Store\", throttle, shadow): no throttle "
            "applies to the method in the policies in force");
  s = state_->SetEnforcement(kGet, EnforcedPolicy::kPerCaller, EnforcementMode::kShadow);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "SetEnforcement(\"/cache.v1.CacheService/Get\", perCaller, shadow): the throttle of "
            "scope \"cache.v1.CacheService/Get\" has no throttle.perCaller block");
  EXPECT_EQ(state_->SetEnforcement("cache.v1.CacheService/", EnforcedPolicy::kThrottle,
                                   EnforcementMode::kShadow)
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(
      state_->SetEnforcement(kGet, EnforcedPolicy::kCriticalityShares, EnforcementMode::kOff)
          .ok());
  // Listed before its first call with the modes in force.
  StatusReport report;
  state_->AppendStatus(report, "cache");
  const ServerMethodStatus* row = Row(report, kGet);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->enforcement, "criticalityShares: off");
}

// The shadow decisions a listener heard.
class ShadowListener : public ResilienceEvents {
 public:
  void OnShadowDecisions(const ShadowDecisionEvent& event) override {
    absl::MutexLock lock(&mu_);
    events_.push_back(event);
  }
  std::vector<ShadowDecisionEvent> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<ShadowDecisionEvent> events_ ABSL_GUARDED_BY(mu_);
};

TEST_P(ShadowServerTest, ShadowDecisionsReachTheServersListener) {
  SimulatedClock clock;  // never advances: one report, at the first decision
  auto listener = std::make_shared<ShadowListener>();
  Start(GetPolicy(R"({"ratePerSecond": 1, "burst": 1, "enforcement": "shadow"})"), clock,
        listener);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(state_->Stats(kGet).shadow_throttle, 2);
  state_->FlushEvents();
  const std::vector<ShadowDecisionEvent> events = listener->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].component, "server");
  EXPECT_EQ(events[0].method, kGet);
  EXPECT_EQ(events[0].policy, EnforcedPolicy::kThrottle);
  EXPECT_EQ(events[0].would_have_rejected, 1);
  EXPECT_EQ(events[0].last_reason, "rate");
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, ShadowServerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience::testing
