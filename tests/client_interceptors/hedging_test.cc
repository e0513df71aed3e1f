// Hedged unary calls (hedgingPolicy) end to end, for every stub flavour:
// the first final answer wins, losers are cancelled and the server sees it,
// no attempt leaks (server handler runs == attempts the client counted), a
// non-fatal code sends the next hedge at once, a fatal code ends the call,
// deadlines and caller cancellation end every hedge, and a spent budget
// sends no hedge.

#include <thread>

#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A budget no test of a few calls spends: 1000 tokens.
// A retryBudget no test spends: a hedged entry without one gets the default
// (10 tokens), which these tests' many hedges would exhaust.
constexpr char kLargeBudget[] = R"(, "retryBudget": {"maxTokens": 1000, "tokenRatio": 0.1})";

// Hedging for TestService/Unary: `hedging` is the hedgingPolicy's fields,
// `entry` more fields of the same methodConfig entry, `top` more fields of
// the file.
std::string HedgingPolicy(const std::string& hedging, const std::string& entry = "",
                          const std::string& top = "") {
  return R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
             "hedgingPolicy": {)" +
         hedging + "}" + entry + "}]" + top + "}";
}

class HedgingTest : public ClientInterceptorsTest {
 protected:
  // Every handler run has returned, and the client counted exactly the
  // attempts the server ran.
  void ExpectNoLeakedAttempts() {
    EXPECT_TRUE(Eventually([&] { return service_.finished() == service_.handled(); }));
    EXPECT_EQ(Stats().attempts, service_.handled());
  }

  grpc::Status Call(Flavour flavour, absl::Duration deadline = absl::Seconds(20)) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return UnaryCall(*stub_, flavour, &context);
  }
};

// The first attempt hangs; the hedge sent after hedgingDelay answers; the
// hanging attempt is cancelled and its handler sees the cancellation. The
// first attempt must reach its handler before the hedge's answer cancels it
// (else the server never runs it): a 0.25 s delay leaves a busy machine time
// for that, where 50 ms (connecting included) might not.
TEST_F(HedgingTest, SlowAttemptIsHedgedAndTheLoserCancelled) {
  Connect(HedgingPolicy(R"("maxAttempts": 2, "hedgingDelay": "0.25s")"));
  service_.ScriptAttempt("", absl::Seconds(20));  // the first attempt of each call hangs
  int calls = 0;
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const absl::Time start = absl::Now();
    EXPECT_TRUE(Call(flavour).ok());
    ++calls;
    const absl::Duration took = absl::Now() - start;
    EXPECT_GE(took, absl::Milliseconds(245));
    EXPECT_LT(took, absl::Seconds(5));
    EXPECT_TRUE(Eventually([&] { return service_.cancelled_seen() == calls; }));
    ExpectNoLeakedAttempts();
    EXPECT_EQ(service_.handled(), 2 * calls);
  }
  // Each hedge carried the attempt metadata a retry carries.
  std::vector<std::string> attempts;
  for (const AttemptRecord& r : service_.Log()) attempts.push_back(r.retry_attempt);
  EXPECT_THAT(attempts, ElementsAre("", "1", "", "1", "", "1"));
  EXPECT_EQ(Stats().calls, 3);
  EXPECT_EQ(Stats().retries, 3);
  EXPECT_EQ(Stats().hedges, 3);
  // An operator tells hedges from retries proper.
  PrometheusText text;
  resilience_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(),
              ::testing::HasSubstr("grpc_resilience_client_hedges_total{grpc_method=\"/"
                                   "resilience.test.TestService/Unary\",channel=\""));
}

// A fast answer wins before the delay: no hedge at all.
TEST_F(HedgingTest, FastAnswerSendsNoHedge) {
  Connect(HedgingPolicy(R"("maxAttempts": 3, "hedgingDelay": "1s")"));
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    EXPECT_TRUE(Call(flavour).ok());
  }
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 3);
  EXPECT_EQ(Stats().retries, 0);
  EXPECT_EQ(Stats().hedges, 0);
}

// A non-fatal code sends the next hedge at once, not after hedgingDelay.
TEST_F(HedgingTest, NonFatalCodeSendsTheNextHedgeAtOnce) {
  Connect(HedgingPolicy(
      R"("maxAttempts": 3, "hedgingDelay": "10s", "nonFatalStatusCodes": ["UNAVAILABLE"])"));
  service_.ScriptAttempt("", absl::ZeroDuration(), grpc::StatusCode::UNAVAILABLE);
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const absl::Time start = absl::Now();
    EXPECT_TRUE(Call(flavour).ok());
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  }
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 6);
}

// A fatal code ends the call with it, and the attempt still running is
// cancelled.
TEST_F(HedgingTest, FatalCodeEndsTheCall) {
  // The second attempt's answer must come back within one hedgingDelay
  // (else a third is sent by its timer), also on a loaded machine.
  Connect(HedgingPolicy(
      R"("maxAttempts": 3, "hedgingDelay": "0.25s", "nonFatalStatusCodes": ["UNAVAILABLE"])"));
  service_.ScriptAttempt("", absl::Seconds(20));  // hangs
  service_.ScriptAttempt("1", absl::ZeroDuration(), grpc::StatusCode::NOT_FOUND);
  int calls = 0;
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const grpc::Status status = Call(flavour);
    ++calls;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "scripted failure");
    EXPECT_TRUE(Eventually([&] { return service_.cancelled_seen() == calls; }));
  }
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 6);  // no third attempt
}

// Non-fatal codes on every attempt: the call ends with the last one.
TEST_F(HedgingTest, NonFatalOnEveryAttemptEndsWithTheLast) {
  Connect(HedgingPolicy(
      R"("maxAttempts": 3, "hedgingDelay": "10s", "nonFatalStatusCodes": ["UNAVAILABLE"])"));
  service_.FailNext(100, grpc::StatusCode::UNAVAILABLE);
  const grpc::Status status = Call(Flavour::kSync);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 3);
}

// The call's deadline ends every hedge: the server sees each cancelled.
// All three attempts (sent at 0, 50 and 100 ms) must reach their handlers
// before the deadline: 2 s leaves a busy machine time for that, where
// 400 ms might not.
TEST_F(HedgingTest, DeadlineEndsEveryHedge) {
  Connect(HedgingPolicy(R"("maxAttempts": 3, "hedgingDelay": "0.05s")", kLargeBudget));
  for (const char* attempt : {"", "1", "2"}) service_.ScriptAttempt(attempt, absl::Seconds(20));
  int calls = 0;
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const absl::Time start = absl::Now();
    const grpc::Status status = Call(flavour, absl::Seconds(2));
    ++calls;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_THAT(status.error_message(), HasSubstr("caller's deadline"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    EXPECT_TRUE(Eventually([&] { return service_.cancelled_seen() == 3 * calls; }));
  }
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 9);
}

// The caller's cancellation ends every hedge at once.
TEST_F(HedgingTest, CallerCancellationEndsEveryHedge) {
  Connect(HedgingPolicy(R"("maxAttempts": 3, "hedgingDelay": "0.05s")", kLargeBudget));
  for (const char* attempt : {"", "1", "2"}) service_.ScriptAttempt(attempt, absl::Seconds(20));
  int calls = 0;
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    const int before = service_.handled();
    std::thread canceller([&] {
      // Once all three attempts reached the server.
      Eventually([&] { return service_.handled() == before + 3; });
      context.TryCancel();
    });
    const absl::Time start = absl::Now();
    const grpc::Status status = UnaryCall(*stub_, flavour, &context);
    canceller.join();
    ++calls;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    EXPECT_TRUE(Eventually([&] { return service_.cancelled_seen() == 3 * calls; }));
  }
  ExpectNoLeakedAttempts();
}

// A spent retry budget (the method's retryBudget) sends no hedge: the slow
// attempt is waited out.
TEST_F(HedgingTest, SpentBudgetSendsNoHedge) {
  // 3 tokens, hedges while more than 1.5 are left; each hedge costs 1, each
  // success gives back 0.1: 3 -> 2.1 -> 1.2 after two hedged calls.
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.02s"},
      "retryBudget": {"maxTokens": 3, "tokenRatio": 0.1}}]})");
  service_.ScriptAttempt("", absl::Milliseconds(300));
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(Call(Flavour::kSync).ok());
  EXPECT_EQ(service_.handled(), 4);
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const absl::Time start = absl::Now();
    EXPECT_TRUE(Call(flavour).ok());
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));  // waited out
  }
  ExpectNoLeakedAttempts();
  EXPECT_EQ(service_.handled(), 7);
  EXPECT_EQ(Stats().retries, 2);
  EXPECT_EQ(Stats().retry_budget_exhausted, 3);
}

// A pushback postponed the next hedge after the only attempt failed; while
// it waited, another method's call on the channel spent gRPC's
// retryThrottling. The postponed hedge is refused and nothing is in flight:
// the call ends with the last attempt's status (it once ended INTERNAL
// "Couldn't initialize byte buffer reader", a status no server sent).
TEST_F(HedgingTest, PostponedHedgeRefusedByTheThrottleEndsWithTheLastStatus) {
  // 4 tokens, hedges while more than 2 are left.
  Connect(HedgingPolicy(
      R"("maxAttempts": 3, "hedgingDelay": "5s", "nonFatalStatusCodes": ["RESOURCE_EXHAUSTED"])",
      "", R"(, "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.1})"));
  service_.FailNext(2, grpc::StatusCode::RESOURCE_EXHAUSTED, "1000");
  grpc::Status hedged;
  std::thread caller([&] { hedged = Call(Flavour::kSync); });
  // The first attempt's failure took a token (4 -> 3) and postponed the
  // hedge by the pushback's 1 s.
  EXPECT_TRUE(Eventually([&] { return resilience_->retry_throttle()->tokens == 3.0; }));
  // A client-streaming call (a method without a policy) fails with a
  // pushback on the same channel: 3 -> 2, no more hedges.
  EXPECT_EQ(MakeCall(*stub_, CallType::kClientStream, Flavour::kSync).status.error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(resilience_->retry_throttle()->tokens, 2.0);
  caller.join();
  EXPECT_EQ(hedged.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << hedged.error_message();
  EXPECT_THAT(hedged.error_message(), HasSubstr("retryThrottling is spent"));
  EXPECT_EQ(service_.handled(), 2);
  EXPECT_EQ(Stats().retry_budget_exhausted, 1);
}

// A cancelled loser is neutral for the breaker: hedged calls whose losers
// are all cancelled never open it, however strict it is.
TEST_F(HedgingTest, CancelledLosersDoNotCountForTheBreaker) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.02s"},
      "breaker": {"threeState": {"consecutiveFailures": 2, "openDuration": "10s"}}}]})");
  service_.ScriptAttempt("", absl::Seconds(20));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Call(Flavour::kSync).ok());
  EXPECT_TRUE(Eventually([&] { return service_.cancelled_seen() == 4; }));
  ExpectNoLeakedAttempts();
  EXPECT_EQ(Stats().rejected_by_breaker, 0);
  EXPECT_TRUE(Call(Flavour::kSync).ok());
}

// A breaker that rejects the first attempt ends the call at once: no hedge,
// no wait for the hedging delay, no call built.
TEST_F(HedgingTest, BreakerRejectionEndsTheCallAtOnce) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
      "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "5s", "nonFatalStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"threeState": {"mode": "force_open"}}}]})");
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const absl::Time start = absl::Now();
    const grpc::Status status = Call(flavour);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(), HasSubstr("rejected locally by the circuit breaker"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  }
  EXPECT_EQ(service_.handled(), 0);
  EXPECT_EQ(Stats().rejected_by_breaker, 3);
  EXPECT_EQ(Stats().attempts, 3);
}

}  // namespace
}  // namespace resilience::testing
