// Shadow mode on a real channel (docs/shadow-mode.md): a shadow breaker
// opens yet every call reaches the server and is counted as one it would
// have rejected; SetEnforcement() and Update() switch it in place (the open
// breaker stays open), the operator's mode outlives an update that leaves
// `enforcement` as it was; off resets it; a shadow bulkhead lets calls run.

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "grpc_resilience/fallback.h"
#include "grpc_resilience/local_rejection.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/core/simulated_clock.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/eventually.h"
#include "tests/testing/recording_events.h"

namespace resilience::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// A three-state breaker that trips after 4 failures and stays open a
// minute (the simulated clock does not move), in `mode`.
std::string Policy(const std::string& mode) {
  return R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
    "breaker": {"threeState": {"minRequests": 4, "failureRateThreshold": 0.5,
                               "openDuration": "60s"}, "enforcement": ")" +
         mode + R"("},
    "bulkhead": {"maxConcurrency": 1, "enforcement": "shadow"}}]})";
}

PolicySet Load(const std::string& json) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(json);
  EXPECT_TRUE(policies.ok()) << policies.status();
  return *policies;
}

class ShadowModeTest : public ClientInterceptorsTest {
 protected:
  void Trip() {
    service_.FailNext(4, grpc::StatusCode::UNAVAILABLE);
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(Unary().ok());
    ASSERT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kOpen);
  }
  // A call that reached the server and succeeded.
  void ExpectPasses() {
    const int before = service_.handled();
    grpc::ClientContext context;
    EXPECT_TRUE(Unary(&context).ok());
    EXPECT_FALSE(RejectedLocally(context));
    EXPECT_EQ(service_.handled(), before + 1);
  }
  void ExpectRejected() {
    const grpc::Status status = Unary();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(), HasSubstr("rejected locally"));
  }

  SimulatedClock clock_;
  std::shared_ptr<RecordingEvents> events_ = std::make_shared<RecordingEvents>();
};

TEST_F(ShadowModeTest, ShadowBreakerOpensYetCallsPassAndAreCounted) {
  Connect(Policy("shadow"), clock_, events_);
  Trip();
  // A fallback answers refused calls: a shadow decision refuses none (the
  // callers get the server's answers, "echo:hi", not "stale").
  ASSERT_TRUE((SetFallback<resilience::test::Req, resilience::test::Resp>(
                   *resilience_, kUnary,
                   [](const resilience::test::Req&, const grpc::Status&,
                      resilience::test::Resp* response) {
                     response->set_text("stale");
                     return grpc::Status::OK;
                   }))
                  .ok());
  for (int i = 0; i < 3; ++i) ExpectPasses();
  const ClientMethodStats stats = Stats();
  EXPECT_EQ(stats.Fallbacks(), 0);
  EXPECT_EQ(stats.rejected_by_breaker, 0);
  EXPECT_EQ(stats.shadow_rejected_by_breaker, 3);
  EXPECT_EQ(stats.breaker_enforcement, EnforcementMode::kShadow);
  // Their outcomes reached no breaker: it is open, as an enforcing one
  // would be, its window holding the four failures and three rejections.
  const BreakerSnapshot snapshot = *resilience_->BreakerSnapshotOf(kUnary);
  EXPECT_EQ(snapshot.state, BreakerState::kOpen);
  EXPECT_EQ(snapshot.counts.rejected, 3);
  PrometheusText text;
  resilience_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(),
              HasSubstr("grpc_resilience_client_shadow_rejections_total{grpc_method=\"" +
                        std::string(kUnary) +
                        "\",channel=\"test-channel\",policy=\"breaker\",reason=\"open\"} 3"));
  StatusReport report;
  resilience_->AppendStatus(report);
  ASSERT_EQ(report.client_methods.size(), 1u);
  EXPECT_EQ(report.client_methods[0].breaker_enforcement, "shadow");
  EXPECT_EQ(report.client_methods[0].shadow_rejected, 3);
  // Reported once, aggregated (the first decision at once).
  ASSERT_TRUE(Eventually([&] {
    for (const std::string& line : events_->lines()) {
      if (absl::StrContains(line, "shadow breaker of")) return true;
    }
    return false;
  }));
}

TEST_F(ShadowModeTest, SetEnforcementSwitchesInPlace) {
  Connect(Policy("shadow"), clock_, events_);
  Trip();
  ExpectPasses();
  ASSERT_TRUE(
      resilience_->SetEnforcement(kUnary, EnforcedPolicy::kBreaker, EnforcementMode::kEnforce)
          .ok());
  ExpectRejected();  // the same breaker, still open
  EXPECT_EQ(Stats().rejected_by_breaker, 1);
  EXPECT_THAT(events_->lines(),
              Contains("operator enforcement enforce of breaker " + std::string(kUnary) +
                       " on test-channel (api): was shadow"));
}

TEST_F(ShadowModeTest, UpdateSwitchesInPlaceAndKeepsTheOperatorsMode) {
  Connect(Policy("shadow"), clock_, events_);
  Trip();
  // The file changes only `enforcement`: nothing is rebuilt.
  absl::StatusOr<PolicyUpdate> update = resilience_->Update(Load(Policy("enforce")));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_TRUE(update->changed.empty());
  ExpectRejected();
  // The operator's shadow outlives a reload that leaves the field as it was.
  ASSERT_TRUE(
      resilience_->SetEnforcement(kUnary, EnforcedPolicy::kBreaker, EnforcementMode::kShadow)
          .ok());
  ASSERT_TRUE(resilience_->Update(Load(Policy("enforce"))).ok());
  ExpectPasses();
  EXPECT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kOpen);
  // A file that changes it wins: off resets the breaker, counts nothing.
  ASSERT_TRUE(resilience_->Update(Load(Policy("off"))).ok());
  EXPECT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kClosed);
  const int64_t shadow = Stats().shadow_rejected_by_breaker;
  service_.FailNext(8, grpc::StatusCode::UNAVAILABLE);
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(Unary().ok());
  ExpectPasses();
  EXPECT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kClosed);
  EXPECT_EQ(Stats().shadow_rejected_by_breaker, shadow);
  StatusReport report;
  resilience_->AppendStatus(report);
  EXPECT_THAT(report.ToHtml(absl::Seconds(2)), HasSubstr(">off<"));
}

TEST_F(ShadowModeTest, SetEnforcementNamesWhatIsWrong) {
  Connect(Policy("enforce"), clock_, events_);
  absl::Status s =
      resilience_->SetEnforcement(kUnary, EnforcedPolicy::kThrottle, EnforcementMode::kShadow);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("throttle is a server's policy"));
  EXPECT_THAT(s.message(), HasSubstr(kUnary));
  s = resilience_->SetEnforcement("/resilience.test.TestService/ServerStream",
                                  EnforcedPolicy::kBreaker, EnforcementMode::kShadow);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("'/resilience.test.TestService/ServerStream' a breaker"));
  EXPECT_THAT(events_->lines(), Contains(HasSubstr("not applied: enforcement shadow of")));
}

// A shadow bulkhead of one slot: while a slow call holds it, another call
// finds no slot and no queue; it runs anyway and is counted (queue_full).
TEST_F(ShadowModeTest, ShadowBulkheadLetsACallWithoutASlotRun) {
  Connect(Policy("enforce"), clock_, events_);
  service_.SlowNext(1, absl::Seconds(1));
  grpc::ClientContext slow_context;
  slow_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  resilience::test::Req request;
  request.set_text("hi");
  resilience::test::Resp response;
  absl::Notification slow_done;
  stub_->async()->Unary(&slow_context, &request, &response,
                        [&slow_done](grpc::Status) { slow_done.Notify(); });
  // In its handler: it holds the slot (and took the slow answer).
  ASSERT_TRUE(Eventually([&] { return service_.handled() >= 1; }));
  ExpectPasses();
  EXPECT_EQ(Stats().rejected_by_bulkhead, 0);
  EXPECT_EQ(Stats().shadow_rejected_by_bulkhead, 1);
  EXPECT_EQ(Stats().bulkhead_enforcement, EnforcementMode::kShadow);
  ASSERT_TRUE(slow_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(
      resilience_->SetEnforcement(kUnary, EnforcedPolicy::kBulkhead, EnforcementMode::kEnforce)
          .ok());
  ExpectPasses();
  EXPECT_EQ(Stats().bulkhead_enforcement, EnforcementMode::kEnforce);
}

}  // namespace
}  // namespace resilience::testing
