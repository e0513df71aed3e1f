// An operator's commands to a channel's breaker (ClientResilience::
// ControlBreaker()) over a real channel: forcing it open rejects calls
// locally, forcing it closed lets calls through an open breaker, reset
// closes it, every command is an event; and the status rows the channel
// adds to a StatusReport.

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/recording_events.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// A three-state breaker that trips after 4 failures and stays open a minute.
constexpr char kPolicy[] = R"({"methodConfig": [{
  "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
  "breaker": {"threeState": {"minRequests": 4, "failureRateThreshold": 0.5,
                             "openDuration": "60s"}}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})";

class BreakerControlTest : public ClientInterceptorsTest {
 protected:
  void SetUp() override {
    ClientInterceptorsTest::SetUp();
    Connect(kPolicy, clock_, events_);
  }
  SimulatedClock clock_;
  std::shared_ptr<RecordingEvents> events_ = std::make_shared<RecordingEvents>();
};

// Forced open before its first call: the method's breaker is made on the
// spot, and the call is rejected locally without reaching the server.
TEST_F(BreakerControlTest, ForceOpenBeforeTheFirstCall) {
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  const grpc::Status status = Unary();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("forced open"));
  EXPECT_EQ(service_.handled(), 0);
  EXPECT_EQ(Stats().rejected_by_breaker, 1);
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kAutomatic).ok());
  EXPECT_TRUE(Unary().ok());
  EXPECT_THAT(events_->lines(),
              ElementsAre("operator force_open of breaker " + std::string(kUnary) +
                              " on test-channel (api): now forced open (own state closed)",
                          "operator automatic of breaker " + std::string(kUnary) +
                              " on test-channel (api): now closed"));
}

// After a trip: forced closed, calls reach the server again; reset closes
// the breaker for good, with a transition event before the operator's.
TEST_F(BreakerControlTest, ForceClosedThenResetAfterATrip) {
  service_.FailNext(4, grpc::StatusCode::UNAVAILABLE);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(Unary().ok());
  ASSERT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kOpen);
  EXPECT_THAT(Unary().error_message(), HasSubstr("rejected locally"));

  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceClosed, "pager").ok());
  EXPECT_TRUE(Unary().ok());
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kAutomatic).ok());
  EXPECT_FALSE(Unary().ok());  // still open: forcing kept the state

  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kReset).ok());
  EXPECT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kClosed);
  EXPECT_TRUE(Unary().ok());
  const std::vector<std::string> lines = events_->lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_THAT(lines[lines.size() - 2], HasSubstr("open -> closed (reset by an operator"));
  EXPECT_THAT(lines.back(), HasSubstr("operator reset of breaker"));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("(pager): now forced closed (own state open)")));
}

// A method without a breaker: NotFound naming channel and method, nothing
// made, and the refusal is an event too.
TEST_F(BreakerControlTest, NoBreakerNoCommand) {
  const absl::Status s = resilience_->ControlBreaker("/resilience.test.TestService/ServerStream",
                                                     BreakerCommand::kForceOpen);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("channel 'test-channel'"));
  EXPECT_THAT(s.message(), HasSubstr("'/resilience.test.TestService/ServerStream'"));
  // A misspelt name is no method at all.
  const absl::Status typo =
      resilience_->ControlBreaker("/resilience.test.TestService/Unarry", BreakerCommand::kReset);
  EXPECT_EQ(typo.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(typo.message(), HasSubstr("is not linked into this process"));
  EXPECT_TRUE(resilience_->AllStats().empty());
  ASSERT_EQ(events_->lines().size(), 2u);
  EXPECT_THAT(events_->lines()[0], HasSubstr("not applied: breaker force_open"));
}

TEST_F(BreakerControlTest, StatusRows) {
  service_.FailNext(4, grpc::StatusCode::UNAVAILABLE);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(Unary().ok());
  EXPECT_FALSE(Unary().ok());  // rejected locally
  clock_.AdvanceTime(absl::Seconds(5));
  StatusReport report;
  resilience_->AppendStatus(report);
  ASSERT_EQ(report.client_methods.size(), 1u);
  const ClientMethodStatus& row = report.client_methods[0];
  EXPECT_EQ(row.channel, "test-channel");
  EXPECT_EQ(row.method, kUnary);
  EXPECT_EQ(row.breaker_kind, "three_state");
  ASSERT_TRUE(row.breaker.has_value());
  EXPECT_EQ(row.breaker->state, BreakerState::kOpen);
  EXPECT_GE(row.breaker->time_in_state, absl::Seconds(5));
  EXPECT_EQ(row.calls, 5);
  EXPECT_EQ(row.rejected_locally, 1);
  ASSERT_EQ(report.retry_throttles.size(), 1u);
  EXPECT_EQ(report.retry_throttles[0].max_tokens, 10);
  // The method retries on nothing: its failures take no token.
  EXPECT_EQ(report.retry_throttles[0].tokens, 10);
}

// Issue 40 item 12: the page listed nothing until a method's first call.
// The method the policy names is listed from the start, with its breaker.
TEST_F(BreakerControlTest, StatusListsAConfiguredMethodBeforeItsFirstCall) {
  StatusReport report;
  resilience_->AppendStatus(report);
  ASSERT_EQ(report.client_methods.size(), 1u);
  const ClientMethodStatus& row = report.client_methods[0];
  EXPECT_EQ(row.method, kUnary);
  EXPECT_EQ(row.breaker_kind, "three_state");
  ASSERT_TRUE(row.breaker.has_value());
  EXPECT_EQ(row.breaker->state, BreakerState::kClosed);
  EXPECT_EQ(row.calls, 0);
  EXPECT_EQ(service_.handled(), 0);
}

// The endpoint the calls went to has its own row and takes commands of its
// own; an endpoint the method never saw is refused, naming those it knows.
TEST_F(BreakerControlTest, EndpointRowsAndCommands) {
  EXPECT_EQ(resilience_->ControlEndpointBreaker(kUnary, "ipv4:127.0.0.1:1",
                                                BreakerCommand::kForceOpen)
                .code(),
            absl::StatusCode::kNotFound);  // not called yet
  ASSERT_TRUE(Unary().ok());
  StatusReport report;
  resilience_->AppendStatus(report);
  ASSERT_EQ(report.client_methods.size(), 1u);
  ASSERT_EQ(report.client_methods[0].endpoints.size(), 1u);
  const EndpointStatus endpoint = report.client_methods[0].endpoints[0];
  EXPECT_THAT(endpoint.endpoint, HasSubstr("127.0.0.1:"));
  EXPECT_EQ(endpoint.outcomes, 1);
  EXPECT_EQ(endpoint.breaker.state, BreakerState::kClosed);

  const absl::Status unknown = resilience_->ControlEndpointBreaker(
      kUnary, "ipv4:10.9.9.9:1", BreakerCommand::kForceOpen, "pager");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("it knows " + endpoint.endpoint));
  ASSERT_TRUE(resilience_
                  ->ControlEndpointBreaker(kUnary, endpoint.endpoint, BreakerCommand::kForceOpen,
                                           "pager")
                  .ok());
  report = StatusReport();
  resilience_->AppendStatus(report);
  EXPECT_EQ(report.client_methods[0].endpoints[0].breaker.mode, BreakerMode::kForceOpen);
  // One endpoint: nothing to route around, the method still decides alone.
  EXPECT_TRUE(Unary().ok());
  EXPECT_THAT(events_->lines().back(),
              HasSubstr("operator force_open of breaker " + std::string(kUnary) + " endpoint " +
                        endpoint.endpoint + " on test-channel (pager): now forced open"));
  EXPECT_THAT(events_->lines()[events_->lines().size() - 2], HasSubstr("not applied"));
}

}  // namespace
}  // namespace resilience::testing
