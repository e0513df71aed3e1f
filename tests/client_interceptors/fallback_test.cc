// Fallbacks (grpc_resilience/fallback.h) on a real channel, for each stub
// flavour: a call the chain refused (breaker, bulkhead) or that failed after
// its retries is answered by the method's fallback; FellBack() says so; the
// original status is still what the call counts as, and fallbacks_total
// counts the cause.

#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpc_resilience/fallback.h"
#include "grpc_resilience/local_rejection.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpcpp/completion_queue.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using resilience::test::Req;
using resilience::test::Resp;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// Retried: 2 attempts, UNAVAILABLE retryable; a breaker an operator can force open.
constexpr char kRetried[] = R"({"methodConfig": [{
  "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
  "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.002s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
  "retryBudget": {"maxTokens": 1000, "tokenRatio": 1},
  "breaker": {"threeState": {"minRequests": 1000, "failureRateThreshold": 0.9,
                             "openDuration": "60s"}}}]})";
// Not retried (a SingleAttemptCall): a breaker only.
constexpr char kSingle[] = R"({"methodConfig": [{
  "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
  "breaker": {"threeState": {"minRequests": 1000, "failureRateThreshold": 0.9,
                             "openDuration": "60s"}}}]})";

// The typed SetFallback() for TestService/Unary.
template <typename Function>
absl::Status SetTyped(ClientResilience& resilience, Function fallback,
                      FallbackOptions options = {}) {
  return SetFallback<Req, Resp>(resilience, kUnary, std::move(fallback), std::move(options));
}

struct Answer {
  grpc::Status status;
  std::string text;
  bool fell_back = false;
  bool rejected_locally = false;
};

// One unary call "hi" with `flavour`'s stub.
Answer Call(resilience::test::TestService::Stub& stub, Flavour flavour) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  Req request;
  request.set_text("hi");
  Resp response;
  Answer answer;
  switch (flavour) {
    case Flavour::kSync:
      answer.status = stub.Unary(&context, request, &response);
      break;
    case Flavour::kAsync: {
      grpc::CompletionQueue cq;
      auto reader = stub.AsyncUnary(&context, request, &cq);
      reader->Finish(&response, &answer.status, reinterpret_cast<void*>(1));
      void* tag = nullptr;
      bool ok = false;
      EXPECT_TRUE(cq.Next(&tag, &ok));
      EXPECT_TRUE(ok);
      cq.Shutdown();
      while (cq.Next(&tag, &ok)) {
      }
      break;
    }
    case Flavour::kCallback: {
      absl::Notification done;
      stub.async()->Unary(&context, &request, &response, [&](grpc::Status s) {
        answer.status = std::move(s);
        done.Notify();
      });
      EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
      break;
    }
  }
  answer.text = response.text();
  answer.fell_back = FellBack(context);
  answer.rejected_locally = RejectedLocally(context);
  return answer;
}

class FallbackTest : public ClientInterceptorsTest,
                     public ::testing::WithParamInterface<Flavour> {
 protected:
  // The typed fallback: "stale:<text>", or a miss (the original failure)
  // for the text "miss".
  void SetStaleFallback(FallbackOptions options = {}) {
    ASSERT_TRUE(SetTyped(
                    *resilience_,
                    [this](const Req& request, const grpc::Status& original, Resp* response) {
                      ++fallback_runs_;
                      last_original_ = original;
                      if (request.text() == "miss") return original;
                      response->set_text("stale:" + request.text());
                      return grpc::Status::OK;
                    },
                    std::move(options))
                    .ok());
  }
  Answer Call() { return testing::Call(*stub_, GetParam()); }

  // The call got the stale answer, and still counts as the UNAVAILABLE it
  // met (the only call so far).
  void ExpectStale(const Answer& answer, bool rejected_locally) {
    EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
    EXPECT_EQ(answer.text, "stale:hi");
    EXPECT_TRUE(answer.fell_back);
    EXPECT_EQ(answer.rejected_locally, rejected_locally);
    EXPECT_EQ(Stats().CallsWithCode(static_cast<int>(grpc::StatusCode::UNAVAILABLE)), 1u);
    EXPECT_EQ(Stats().CallsWithCode(0), 0u);
    EXPECT_EQ(Stats().Fallbacks(), 1);
  }

  int fallback_runs_ = 0;
  grpc::Status last_original_;
};

// A retried call whose attempts all fail is answered by the fallback; the
// call counts as UNAVAILABLE and as one fallback, cause "failed".
TEST_P(FallbackTest, RetriedCallThatFailsIsAnswered) {
  Connect(kRetried);
  SetStaleFallback();
  service_.FailNext(2);
  ExpectStale(Call(), /*rejected_locally=*/false);
  EXPECT_EQ(last_original_.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Stats().attempts, 2);
  EXPECT_EQ(Stats().fallbacks_failed, 1);
}

// A success is never touched: the fallback does not even run.
TEST_P(FallbackTest, SuccessIsNotTouched) {
  Connect(kRetried);
  SetStaleFallback();
  const Answer answer = Call();
  EXPECT_TRUE(answer.status.ok());
  EXPECT_EQ(answer.text, "echo:hi");
  EXPECT_FALSE(answer.fell_back);
  EXPECT_EQ(fallback_runs_, 0);
  EXPECT_EQ(Stats().Fallbacks(), 0);
}

// The breaker's refusal of a retried call: cause "breaker"; the call still
// says it was rejected locally.
TEST_P(FallbackTest, BreakerRefusalOfRetriedCallIsAnswered) {
  Connect(kRetried);
  SetStaleFallback();
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  ExpectStale(Call(), /*rejected_locally=*/true);
  EXPECT_EQ(service_.handled(), 0);
  EXPECT_EQ(Stats().fallbacks_breaker, 1);
}

// The breaker's refusal of a call that is not retried (its hijack).
TEST_P(FallbackTest, BreakerRefusalOfSingleAttemptCallIsAnswered) {
  Connect(kSingle);
  SetStaleFallback();
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  ExpectStale(Call(), /*rejected_locally=*/true);
  EXPECT_EQ(Stats().fallbacks_breaker, 1);
}

// A call that is not retried, went out and failed: its failure is replaced
// at POST_RECV_STATUS (the codes named, as the method has no retryable ones).
TEST_P(FallbackTest, FailedSingleAttemptCallIsAnswered) {
  Connect(kSingle);
  FallbackOptions options;
  options.codes = {grpc::StatusCode::UNAVAILABLE};
  SetStaleFallback(options);
  service_.FailNext(1);
  ExpectStale(Call(), /*rejected_locally=*/false);
  EXPECT_EQ(Stats().fallbacks_failed, 1);
}

// A failure whose code is not among the fallback's (by default the method's
// retryable codes) stays, and the fallback does not run.
TEST_P(FallbackTest, FailureOutsideTheCodesStays) {
  Connect(kRetried);
  SetStaleFallback();
  service_.FailNext(1, grpc::StatusCode::INTERNAL);
  const Answer answer = Call();
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_FALSE(answer.fell_back);
  EXPECT_EQ(fallback_runs_, 0);
  EXPECT_EQ(Stats().Fallbacks(), 0);
}

// A fallback that gives the original failure back (a miss) leaves the call
// failed, not fallen back.
TEST_P(FallbackTest, MissKeepsTheFailure) {
  Connect(kRetried);
  SetStaleFallback();
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  grpc::ClientContext context;
  Req request;
  request.set_text("miss");
  Resp response;
  const grpc::Status status = stub_->Unary(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(FellBack(context));
  EXPECT_TRUE(RejectedLocally(context));
  EXPECT_EQ(fallback_runs_, 1);
  EXPECT_EQ(Stats().Fallbacks(), 0);
}

// A fallback may answer with another status: the caller gets it, without a
// message.
TEST_P(FallbackTest, FallbackMayAnswerAStatus) {
  Connect(kRetried);
  ASSERT_TRUE(SetFallback(*resilience_, kUnary,
                          [](const grpc::ByteBuffer&, const grpc::Status&, grpc::ByteBuffer*) {
                            return grpc::Status(grpc::StatusCode::NOT_FOUND, "no stale copy");
                          })
                  .ok());
  service_.FailNext(2);
  const Answer answer = Call();
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(answer.status.error_message(), "no stale copy");
  EXPECT_TRUE(answer.fell_back);
  EXPECT_EQ(Stats().fallbacks_failed, 1);
}

// A failed call whose retry the spent retry budget refused: cause
// "retry_budget" (a local refusal, whatever the codes).
TEST_P(FallbackTest, RetryBudgetRefusalIsAnswered) {
  Connect(R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.002s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    "retryBudget": {"maxTokens": 1, "tokenRatio": 0.1}}]})");
  FallbackOptions options;
  options.codes = {grpc::StatusCode::INTERNAL};  // not the failure's: the refusal decides
  SetStaleFallback(options);
  service_.FailNext(3);
  ExpectStale(Call(), /*rejected_locally=*/false);
  EXPECT_EQ(Stats().attempts, 1);
  EXPECT_EQ(Stats().fallbacks_retry_budget, 1);
}

// The bulkhead's refusal (no slot, no queue) of a call that is not retried.
TEST_P(FallbackTest, BulkheadRefusalIsAnswered) {
  Connect(R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
    "bulkhead": {"maxConcurrency": 1}}]})");
  SetStaleFallback();
  // A call that holds the one slot (taken when it starts) until cancelled.
  service_.SlowNext(1, absl::Seconds(30));
  grpc::ClientContext holder;
  Req request;
  request.set_text("hold");
  Resp response;
  absl::Notification held_done;
  stub_->async()->Unary(&holder, &request, &response, [&](grpc::Status) { held_done.Notify(); });
  ExpectStale(Call(), /*rejected_locally=*/true);
  EXPECT_EQ(Stats().fallbacks_bulkhead, 1);
  holder.TryCancel();
  EXPECT_TRUE(held_done.WaitForNotificationWithTimeout(absl::Seconds(20)));
}

// The policy file's static response answers a refusal; a fallback from code
// replaces it.
TEST_P(FallbackTest, PolicyFileResponse) {
  Connect(R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
    "breaker": {"threeState": {"minRequests": 1000, "failureRateThreshold": 0.9,
                               "openDuration": "60s"}},
    "fallback": {"response": {"text": "from-file"}}}]})");
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  Answer answer = Call();
  EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(answer.text, "from-file");
  EXPECT_TRUE(answer.fell_back);
  SetStaleFallback();
  answer = Call();
  EXPECT_EQ(answer.text, "stale:hi");
  EXPECT_EQ(Stats().fallbacks_breaker, 2);
}

// The policy file's status answers a retried call's failure.
TEST_P(FallbackTest, PolicyFileStatus) {
  Connect(R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService", "method": "Unary"}],
    "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.002s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    "fallback": {"status": "NOT_FOUND", "message": "served from nowhere"}}]})");
  service_.FailNext(2);
  const Answer answer = Call();
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(answer.status.error_message(), "served from nowhere");
  EXPECT_TRUE(answer.fell_back);
  EXPECT_EQ(Stats().fallbacks_failed, 1);
}

INSTANTIATE_TEST_SUITE_P(Flavours, FallbackTest,
                         ::testing::Values(Flavour::kSync, Flavour::kAsync, Flavour::kCallback),
                         [](const ::testing::TestParamInfo<Flavour>& info) {
                           return std::string(Name(info.param));
                         });

class FallbackMetricsTest : public ClientInterceptorsTest {};

// fallbacks_total has a sample per cause for a method with a fallback.
TEST_F(FallbackMetricsTest, FallbacksTotalByCause) {
  Connect(kRetried);
  ASSERT_TRUE(SetTyped(*resilience_,
                                     [](const Req&, const grpc::Status&, Resp* response) {
                                       response->set_text("stale");
                                       return grpc::Status::OK;
                                     })
                  .ok());
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  EXPECT_TRUE(Call(*stub_, Flavour::kSync).status.ok());
  PrometheusText text;
  resilience_->AppendMetrics(text);
  const std::string rendered = text.Finish();
  EXPECT_THAT(rendered, HasSubstr("grpc_resilience_client_fallbacks_total{grpc_method=\"" +
                                  std::string(kUnary) +
                                  "\",channel=\"test-channel\",cause=\"breaker\"} 1"));
  EXPECT_THAT(rendered, HasSubstr("cause=\"failed\"} 0"));
}

// A method name not of the form /pkg.Service/Method is refused.
TEST_F(FallbackMetricsTest, BadMethodNameIsRefused) {
  Connect(kRetried);
  const absl::Status status = SetFallback(*resilience_, "Unary", nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"Unary\""));
}

// Removing the fallback (null) leaves failures as they are.
TEST_F(FallbackMetricsTest, NullFallbackRemovesIt) {
  Connect(kRetried);
  ASSERT_TRUE(SetTyped(*resilience_,
                                     [](const Req&, const grpc::Status&, Resp*) {
                                       return grpc::Status::OK;
                                     })
                  .ok());
  ASSERT_TRUE(SetFallback(*resilience_, kUnary, nullptr).ok());
  ASSERT_TRUE(resilience_->ControlBreaker(kUnary, BreakerCommand::kForceOpen).ok());
  const Answer answer = Call(*stub_, Flavour::kSync);
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(answer.fell_back);
}

}  // namespace
}  // namespace resilience::testing
