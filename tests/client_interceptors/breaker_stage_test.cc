// The breaker interceptor over real channels: local rejection for every call
// type and stub flavour, opening on failures and recovering, and the outcome
// it records for each attempt.

#include "src/client_interceptors/breaker_stage.h"
#include "src/client_interceptors/local_rejection.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/recording_events.h"
#include "src/core/simulated_clock.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kForceOpen[] = R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "breaker": {"threeState": {"mode": "force_open"}}}]})";

// An open breaker rejects all 12 call-type x stub combinations before
// anything reaches the network: UNAVAILABLE naming the method and the
// breaker's state, the local-rejection trailer, the handler never runs.
TEST_F(ClientInterceptorsTest, RejectsEveryCallTypeAndStubFlavour) {
  Connect(kForceOpen);
  for (CallType type : {CallType::kUnary, CallType::kClientStream, CallType::kServerStream,
                        CallType::kBidi}) {
    for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
      SCOPED_TRACE(std::string(Name(type)) + " / " + Name(flavour));
      CallResult r = MakeCall(*stub_, type, flavour);
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
      EXPECT_THAT(r.status.error_message(), HasSubstr("/resilience.test.TestService/"));
      EXPECT_THAT(r.status.error_message(),
                  HasSubstr("rejected locally by the circuit breaker (three_state"));
      EXPECT_THAT(r.status.error_message(), HasSubstr("forced open"));
      EXPECT_EQ(r.trailers.count(kLocalRejectionKey), 1u);
      EXPECT_EQ(r.messages_received, 0);
      if (type == CallType::kClientStream || type == CallType::kBidi) {
        EXPECT_TRUE(r.write_failed);
      }
    }
  }
  EXPECT_EQ(service_.handled(), 0);
  // The channel never even connected.
  EXPECT_EQ(channel_->GetState(false), GRPC_CHANNEL_IDLE);
}

// With the breaker closed, all 12 combinations go through untouched.
TEST_F(ClientInterceptorsTest, ClosedBreakerPassesEveryCallType) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"sre": {}}}]})");
  for (CallType type : {CallType::kUnary, CallType::kClientStream, CallType::kServerStream,
                        CallType::kBidi}) {
    for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
      SCOPED_TRACE(std::string(Name(type)) + " / " + Name(flavour));
      CallResult r = MakeCall(*stub_, type, flavour);
      EXPECT_TRUE(r.status.ok()) << r.status.error_message();
      if (type == CallType::kServerStream) {
        EXPECT_EQ(r.messages_received, 3);
      }
      if (type == CallType::kBidi) {
        EXPECT_EQ(r.messages_received, 1);
      }
    }
  }
  EXPECT_EQ(service_.handled(), 12);
  const BreakerSnapshot snapshot =
      *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Bidi");
  EXPECT_EQ(snapshot.counts.success, 3);
}

// The three-state breaker opens on failures (fast, on consecutive ones),
// fails calls locally while open, and closes after the backend heals: on a
// simulated clock, so the open period passes in one line.
TEST_F(ClientInterceptorsTest, ThreeStateOpensAndRecovers) {
  // Every transition is an event, with the method, the channel and the cause.
  auto recorder = std::make_shared<RecordingEvents>();
  SimulatedClock clock;
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"threeState": {"consecutiveFailures": 5, "openDuration": "5s",
                                 "probeInterval": "0s"}}}]})",
          clock, recorder);
  service_.FailNext(1000);  // the backend is down
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_FALSE(RejectedLocally(context));  // the server's UNAVAILABLE
  }
  EXPECT_EQ(service_.handled(), 5);
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext context;
    grpc::Status s = Unary(&context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(context.GetServerTrailingMetadata().count(kLocalRejectionKey), 1u);
    EXPECT_TRUE(RejectedLocally(context));
  }
  EXPECT_EQ(service_.handled(), 5);  // failed fast, never sent
  EXPECT_EQ(Stats().rejected_by_breaker, 20);
  service_.FailNext(0);  // the backend heals
  clock.AdvanceTime(absl::Seconds(5));
  EXPECT_TRUE(Unary().ok());  // the probe
  EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->state,
            BreakerState::kClosed);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Unary().ok());
  // The method's breaker, and (breakers per endpoint, on by default) the
  // breaker of the one endpoint, which makes the same transitions.
  std::vector<std::string> method_lines;
  std::vector<std::string> endpoint_lines;
  for (const std::string& line : recorder->lines()) {
    (absl::StrContains(line, " at endpoint ipv4:127.0.0.1:") ? endpoint_lines : method_lines)
        .push_back(line);
  }
  EXPECT_THAT(method_lines,
              ElementsAre(HasSubstr("breaker /resilience.test.TestService/Unary on test-channel: "
                                    "closed -> open (5 consecutive failures, threshold 5)"),
                          HasSubstr(": open -> half-open (open period ended"),
                          HasSubstr(": half-open -> closed (half-open probes succeeded")));
  EXPECT_THAT(endpoint_lines,
              ElementsAre(HasSubstr("closed -> open (5 consecutive failures, threshold 5)"),
                          HasSubstr(": open -> half-open (open period ended"),
                          HasSubstr(": half-open -> closed (half-open probes succeeded")));
}

// The SRE breaker starts dropping as failures outnumber accepts and stops
// once the window holds successes again.
TEST_F(ClientInterceptorsTest, SreDropsAndRecovers) {
  SimulatedClock clock;
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"sre": {"k": 1.5, "protection": 5, "window": "10s", "buckets": 40}}}]})",
          clock);
  service_.FailNext(1000000);
  int local = 0;
  for (int i = 0; i < 200; ++i) {
    clock.AdvanceTime(absl::Milliseconds(1));  // one call per simulated ms
    grpc::ClientContext context;
    (void)Unary(&context);
    if (context.GetServerTrailingMetadata().count(kLocalRejectionKey) == 1) ++local;
  }
  EXPECT_GT(local, 100);  // most calls fail fast
  EXPECT_LT(service_.handled(), 100);
  EXPECT_GT(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->drop_probability,
            0.5);
  service_.FailNext(0);
  clock.AdvanceTime(absl::Seconds(11));  // the failures leave the window
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Unary().ok());
  EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->drop_probability,
            0.0);
}

// Issue 40 item 7: a server's throttle rejecting with a pushback
// (RESOURCE_EXHAUSTED and grpc-retry-pushback-ms, its limit lowered) is
// load feedback: a three-state breaker does not count it, so it does not
// open and serves at once when the limit is back; the SRE throttle counts
// it. Both call objects: a single attempt, and a retried call (its policy
// retries UNAVAILABLE only).
TEST_F(ClientInterceptorsTest, ServerPushbackIsNeutralToAThreeStateBreaker) {
  // Each channel's clock outlives it (the fixture keeps the last channel).
  SimulatedClock clocks[3];
  SimulatedClock* clock = clocks;
  for (const char* retry : {"", R"("retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s",
        "maxBackoff": "0.01s", "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]},)"}) {
    SCOPED_TRACE(retry);
    Connect(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
        )", retry, R"("breaker": {"threeState": {"consecutiveFailures": 5}}}]})"),
            *clock++);
    service_.FailNext(40, grpc::StatusCode::RESOURCE_EXHAUSTED, "10");  // the limit lowered
    for (int i = 0; i < 40; ++i) {
      grpc::ClientContext context;
      EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      EXPECT_FALSE(RejectedLocally(context)) << i;
    }
    const BreakerSnapshot s = *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary");
    EXPECT_EQ(s.state, BreakerState::kClosed);
    EXPECT_EQ(s.counts.failure, 0);
    // The limit back: the next call is served.
    EXPECT_TRUE(Unary().ok());
    EXPECT_EQ(Stats().rejected_by_breaker, 0);
    // A RESOURCE_EXHAUSTED without a pushback is still a failure.
    service_.FailNext(5, grpc::StatusCode::RESOURCE_EXHAUSTED);
    for (int i = 0; i < 5; ++i) (void)Unary();
    EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->state,
              BreakerState::kOpen);
  }
  // The SRE throttle counts the pushback as a request the backend did not
  // accept.
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"sre": {}}}]})", *clock);
  service_.FailNext(20, grpc::StatusCode::RESOURCE_EXHAUSTED, "10");
  for (int i = 0; i < 20; ++i) (void)Unary();
  EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->counts.failure,
            20);
}

// What the breaker records: the backend's own answers (NOT_FOUND) as
// success, UNAVAILABLE as failure, a call the caller's deadline ended as a
// failure (callerDeadline FAILURE, the default) and the caller's
// cancellation as nothing at all.
TEST_F(ClientInterceptorsTest, OutcomeAccounting) {
  for (const char* caller_deadline : {"", R"(, "callerDeadline": "NEUTRAL")"}) {
    SCOPED_TRACE(caller_deadline);
    const bool neutral = *caller_deadline != '\0';
    Connect(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
        "breaker": {"sre": {})", caller_deadline, "}}]}"));
    service_.FailNext(2, grpc::StatusCode::NOT_FOUND);
    (void)Unary();
    (void)Unary();
    service_.FailNext(3, grpc::StatusCode::UNAVAILABLE);
    for (int i = 0; i < 3; ++i) (void)Unary();
    service_.SlowNext(1, absl::Seconds(2));
    EXPECT_EQ(Unary(nullptr, absl::Milliseconds(50)).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
    service_.SlowNext(1, absl::Seconds(2));
    {
      grpc::ClientContext context;
      std::thread canceller([&] {
        absl::SleepFor(absl::Milliseconds(50));
        context.TryCancel();
      });
      EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::CANCELLED);
      canceller.join();
    }
    const BreakerSnapshot s =
        *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary");
    EXPECT_EQ(s.counts.success, 2);
    EXPECT_EQ(s.counts.failure, neutral ? 3 : 4);
  }
}

// A backend that hangs is seen only through deadlines: 20 calls whose
// callers give them 50 ms each open the breaker, although no server ever
// answered. failureCodes/successCodes decide what such a call is, like any
// other DEADLINE_EXCEEDED.
TEST_F(ClientInterceptorsTest, HungBackendTripsTheBreaker) {
  struct Case {
    const char* breaker;
    int64_t failures;
  };
  for (const Case& c : {Case{R"("threeState": {"minRequests": 20})", 20},
                        Case{R"("threeState": {"minRequests": 20}, "callerDeadline": "NEUTRAL")", 0},
                        Case{R"("threeState": {"minRequests": 20},
                                "successCodes": ["DEADLINE_EXCEEDED"])", 0}}) {
    SCOPED_TRACE(c.breaker);
    Connect(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
        "breaker": {)", c.breaker, "}}]}"));
    service_.SlowNext(20, absl::Seconds(5));
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(Unary(nullptr, absl::Milliseconds(50)).error_code(),
                grpc::StatusCode::DEADLINE_EXCEEDED);
    }
    const BreakerSnapshot s =
        *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary");
    EXPECT_EQ(s.counts.failure, c.failures);
    EXPECT_EQ(s.state == BreakerState::kOpen, c.failures == 20);
  }
}

// slowCallThreshold judges a stream by the time to its first response, not
// by how long it stays open: three healthy streams that stay open 500 ms
// after an immediate first message are not slow; three whose first message
// takes 500 ms are. (A 0.3 s threshold leaves an immediate first message
// room on a loaded machine.)
TEST_F(ClientInterceptorsTest, SlowStreamsAreJudgedByTheirFirstResponse) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"threeState": {"minRequests": 3, "slowCallThreshold": "0.3s",
                                 "slowCallRateThreshold": 0.5}}}]})");
  const char* kMethod = "/resilience.test.TestService/ServerStream";
  service_.PauseStreamsNext(3, absl::Milliseconds(500));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  }
  BreakerSnapshot s = *resilience_->BreakerSnapshotOf(kMethod);
  EXPECT_EQ(s.counts.slow, 0);
  EXPECT_EQ(s.state, BreakerState::kClosed);
  service_.SlowNext(3, absl::Milliseconds(500));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  }
  s = *resilience_->BreakerSnapshotOf(kMethod);
  EXPECT_EQ(s.counts.slow, 3);
  EXPECT_EQ(s.state, BreakerState::kOpen);
}

// Per-method policies apply to the right methods only.
TEST_F(ClientInterceptorsTest, PoliciesApplyPerMethod) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
      "breaker": {"threeState": {"mode": "force_open"}}}]})");
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  CallResult other = MakeCall(*stub_, CallType::kBidi, Flavour::kSync);
  EXPECT_TRUE(other.status.ok());
  EXPECT_FALSE(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Bidi").has_value());
}

}  // namespace
}  // namespace resilience::testing
