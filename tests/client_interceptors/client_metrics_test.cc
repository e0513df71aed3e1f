// The client's metrics: every method called is counted, with or without a
// policy (calls by final status, latency, attempts), breaker transitions
// are counted, and AppendMetrics() renders the families of docs/metrics.md,
// which Prometheus' promtool accepts.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "src/core/simulated_clock.h"
#include "src/client_interceptors/local_rejection.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/chain_channel.h"
#include "tests/testing/metrics_test_fixture.h"
#include "tests/testing/promtool.h"
#include "tests/testing/recording_events.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";
constexpr char kServerStream[] = "/resilience.test.TestService/ServerStream";
constexpr char kBidi[] = "/resilience.test.TestService/Bidi";

constexpr char kDuration[] = "grpc_resilience_client_call_duration_seconds";

class ClientMetricsTest : public MetricsTest<ClientInterceptorsTest> {
 protected:
  // Like Connect(), with the options given (name "test-channel" unless set).
  void ConnectWith(const std::string& policy_json, ClientResilience::Options options) {
    if (options.name.empty()) options.name = "test-channel";
    ResilientChannel made = NewChainChannel(*server_, Policies(policy_json), std::move(options));
    resilience_ = made.resilience;
    channel_ = made.channel;
    stub_ = resilience::test::TestService::NewStub(channel_);
  }

  std::string Render() { return RenderMetrics(*resilience_); }
};

// A method without a policy is counted: calls by final status, latency and
// attempts, for every call type and stub flavour.
TEST_F(ClientMetricsTest, MethodWithoutPolicyIsCounted) {
  Connect("{}");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Unary().ok());
  service_.FailNext(1, grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::NOT_FOUND);
  const ClientMethodStats unary = Stats(kUnary);
  EXPECT_EQ(unary.calls, 4);
  EXPECT_EQ(unary.attempts, 4);
  EXPECT_EQ(unary.retries, 0);
  EXPECT_EQ(unary.CallsWithCode(0), 3u);
  EXPECT_EQ(unary.CallsWithCode(static_cast<int>(grpc::StatusCode::NOT_FOUND)), 1u);
  EXPECT_EQ(unary.calls_by_code.total(), 4u);
  EXPECT_EQ(unary.latency.count, 4u);
  EXPECT_GT(unary.latency.sum_seconds, 0);

  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    for (CallType type : kAllCallTypes) {
      SCOPED_TRACE(absl::StrCat(Name(type), " ", Name(flavour)));
      EXPECT_TRUE(MakeCall(*stub_, type, flavour).status.ok());
    }
  }
  for (const char* method : {"/resilience.test.TestService/ClientStream", kServerStream, kBidi}) {
    SCOPED_TRACE(method);
    const ClientMethodStats s = Stats(method);
    EXPECT_EQ(s.calls, 3);
    EXPECT_EQ(s.attempts, 3);
    EXPECT_EQ(s.CallsWithCode(0), 3u);
    EXPECT_EQ(s.latency.count, 3u);
  }
  EXPECT_EQ(Stats(kUnary).CallsWithCode(0), 6u);
}

// A policy that gives the client nothing to do (a server throttle) gets no
// interceptor of its own, and the call is still counted once.
TEST_F(ClientMetricsTest, PolicyWithNothingForTheClientIsCounted) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "throttle": {"maxConcurrency": 10}}]})");
  EXPECT_TRUE(Unary().ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  EXPECT_EQ(Stats(kUnary).CallsWithCode(0), 1u);
  EXPECT_EQ(Stats(kUnary).attempts, 1);
  EXPECT_EQ(Stats(kServerStream).CallsWithCode(0), 1u);
  EXPECT_EQ(Stats(kServerStream).latency.count, 1u);
}

// Each call is counted once, by whichever of the chain's interceptors it
// has: retry, timeout, breaker, or both of the latter.
TEST_F(ClientMetricsTest, EveryChainCountsEachCallOnce) {
  for (const char* policy : {
           R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                              "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]})",
           R"("timeout": "5s")",
           R"("breaker": {"sre": {}})",
           R"("timeout": "5s", "breaker": {"sre": {}})",
           R"("timeout": "5s", "breaker": {"sre": {}},
              "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                              "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]})",
       }) {
    SCOPED_TRACE(policy);
    Connect(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}], )",
                         policy, "}]}"));
    for (CallType type : kAllCallTypes) {
      EXPECT_TRUE(MakeCall(*stub_, type, Flavour::kSync).status.ok());
    }
    service_.FailNext(1, grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(Unary().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    const ClientMethodStats unary = Stats(kUnary);
    EXPECT_EQ(unary.calls, 2);
    EXPECT_EQ(unary.attempts, 2);
    EXPECT_EQ(unary.CallsWithCode(0), 1u);
    EXPECT_EQ(unary.CallsWithCode(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT)), 1u);
    EXPECT_EQ(unary.latency.count, 2u);
    for (const char* method : {"/resilience.test.TestService/ClientStream", kServerStream, kBidi}) {
      SCOPED_TRACE(method);
      EXPECT_EQ(Stats(method).attempts, 1);
      EXPECT_EQ(Stats(method).calls_by_code.total(), 1u);
      EXPECT_EQ(Stats(method).latency.count, 1u);
    }
  }
}

// Attempts are counted without a breaker: through a flaky backend, every
// attempt of a retried call (attempts = calls + retries), and the one
// attempt of a call that is not retried; the latency covers the retries.
TEST_F(ClientMetricsTest, AttemptsAreCountedWithoutABreaker) {
  Connect(R"({"methodConfig": [
      {"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.02s",
                       "backoffMultiplier": 1, "jitter": 0,
                       "retryableStatusCodes": ["UNAVAILABLE"]}},
      {"name": [{"service": "resilience.test.TestService", "method": "ServerStream"}],
       "timeout": "5s"}],
      "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1}})");
  for (int i = 0; i < 5; ++i) {
    service_.FailNext(2);  // two failures, then the third attempt succeeds
    EXPECT_TRUE(Unary().ok());
  }
  const ClientMethodStats unary = Stats(kUnary);
  EXPECT_EQ(unary.calls, 5);
  EXPECT_EQ(unary.retries, 10);
  EXPECT_EQ(unary.attempts, unary.calls + unary.retries);
  EXPECT_EQ(unary.CallsWithCode(0), 5u);
  EXPECT_EQ(unary.CallsWithCode(static_cast<int>(grpc::StatusCode::UNAVAILABLE)), 0u);
  // Each call waited two backoffs of 20 ms: in the 50 ms bucket or above.
  EXPECT_EQ(unary.latency.count, 5u);
  EXPECT_GE(unary.latency.sum_seconds, 5 * 0.04);
  EXPECT_EQ(unary.latency.bucket_counts[0] + unary.latency.bucket_counts[1] +
                unary.latency.bucket_counts[2] + unary.latency.bucket_counts[3] +
                unary.latency.bucket_counts[4] + unary.latency.bucket_counts[5],
            0u);

  service_.FailNext(3);  // more failures than attempts
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Stats(kUnary).attempts, 18);
  EXPECT_EQ(Stats(kUnary).CallsWithCode(static_cast<int>(grpc::StatusCode::UNAVAILABLE)), 1u);

  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  }
  EXPECT_EQ(Stats(kServerStream).attempts, 2);
  EXPECT_EQ(Stats(kServerStream).retries, 0);
}

// Breaker transitions are counted, still reach Options::events, and show in
// the state gauge; local rejections count as calls with the status the
// application saw.
TEST_F(ClientMetricsTest, BreakerTransitionsAreCounted) {
  auto recorder = std::make_shared<RecordingEvents>();
  SimulatedClock clock;
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"threeState": {"consecutiveFailures": 5, "openDuration": "5s",
                                 "probeInterval": "0s"}}}]})",
          clock, recorder);
  service_.FailNext(1000);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_TRUE(RejectedLocally(context));
  }
  ClientMethodStats open = Stats(kUnary);
  EXPECT_EQ(open.Transitions(BreakerState::kClosed, BreakerState::kOpen), 1);
  EXPECT_EQ(open.rejected_by_breaker, 3);
  EXPECT_EQ(open.attempts, 8);
  EXPECT_EQ(open.CallsWithCode(static_cast<int>(grpc::StatusCode::UNAVAILABLE)), 8u);
  std::string text = Render();
  EXPECT_THAT(text, HasSubstr("grpc_resilience_client_breaker_state{grpc_method=\"" +
                              std::string(kUnary) +
                              "\",channel=\"test-channel\",state=\"open\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_resilience_client_local_rejections_total{grpc_method=\"" +
                              std::string(kUnary) +
                              "\",channel=\"test-channel\",cause=\"breaker\"} 3\n"));

  service_.FailNext(0);
  clock.AdvanceTime(absl::Seconds(5));
  EXPECT_TRUE(Unary().ok());  // the probe closes it
  const ClientMethodStats closed = Stats(kUnary);
  EXPECT_EQ(closed.Transitions(BreakerState::kClosed, BreakerState::kOpen), 1);
  EXPECT_EQ(closed.Transitions(BreakerState::kOpen, BreakerState::kHalfOpen), 1);
  EXPECT_EQ(closed.Transitions(BreakerState::kHalfOpen, BreakerState::kClosed), 1);
  EXPECT_EQ(closed.Transitions(BreakerState::kHalfOpen, BreakerState::kOpen), 0);
  // Still told to the listener: the method's three transitions and the
  // same three of its one endpoint's breaker (breakers per endpoint).
  EXPECT_EQ(recorder->lines().size(), 6u);
  text = Render();
  for (const char* line : {
           R"(grpc_resilience_client_breaker_state{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",state="closed"} 1)",
           R"(grpc_resilience_client_breaker_state{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",state="open"} 0)",
           R"(grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="closed",to="open"} 1)",
           R"(grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="open",to="half-open"} 1)",
           R"(grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="half-open",to="closed"} 1)",
           R"(grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="half-open",to="open"} 0)",
       }) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat(line, "\n")));
  }
}

// AllStats() lists every method called, with or without a policy, sorted;
// methods never called are not there.
TEST_F(ClientMetricsTest, AllStatsListsEveryMethodCalled) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                          "method": "Unary"}], "breaker": {"sre": {}}}]})");
  EXPECT_TRUE(Unary().ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kBidi, Flavour::kAsync).status.ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kBidi, Flavour::kCallback).status.ok());
  const std::vector<std::pair<std::string, ClientMethodStats>> all = resilience_->AllStats();
  std::vector<std::string> names;
  for (const auto& [name, stats] : all) names.push_back(name);
  EXPECT_THAT(names, ElementsAre(kBidi, kServerStream, kUnary));
  EXPECT_EQ(all[0].second.CallsWithCode(0), 2u);
  EXPECT_EQ(all[1].second.CallsWithCode(0), 1u);
  EXPECT_EQ(all[2].second.CallsWithCode(0), 1u);
  EXPECT_EQ(all[2].second.attempts, 1);
}

// With metrics off, a method without a policy passes through untouched and
// nothing is counted by status or latency; methods with a policy keep their
// other counters (attempts too, without a breaker).
TEST_F(ClientMetricsTest, MetricsOff) {
  ClientResilience::Options options;
  options.metrics = false;
  ConnectWith(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                              "method": "Unary"}], "timeout": "5s"}]})",
              options);
  EXPECT_TRUE(Unary().ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  EXPECT_EQ(Stats(kServerStream).calls, 0);
  EXPECT_EQ(Stats(kServerStream).attempts, 0);
  const ClientMethodStats unary = Stats(kUnary);
  EXPECT_EQ(unary.calls, 1);
  EXPECT_EQ(unary.attempts, 1);
  EXPECT_EQ(unary.calls_by_code.total(), 0u);
  EXPECT_EQ(unary.latency.count, 0u);
  const auto all = resilience_->AllStats();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, kUnary);
  EXPECT_EQ(Render(),
            "# HELP grpc_resilience_client_attempts_total Attempts made: each attempt of a "
            "retried call, the one attempt of any other call.\n"
            "# TYPE grpc_resilience_client_attempts_total counter\n"
            "grpc_resilience_client_attempts_total{grpc_method=\"/resilience.test.TestService/"
            "Unary\",channel=\"test-channel\"} 1\n"
            // The channel's policy generation and failed reloads, always.
            "# HELP grpc_resilience_client_policy_generation The generation of the channel's "
            "policies in force: 1 as created, one more per update.\n"
            "# TYPE grpc_resilience_client_policy_generation gauge\n"
            "grpc_resilience_client_policy_generation{channel=\"test-channel\"} 1\n"
            "# HELP grpc_resilience_client_policy_reload_failures_total Policy files that failed "
            "to load on a reload (nothing changed).\n"
            "# TYPE grpc_resilience_client_policy_reload_failures_total counter\n"
            "grpc_resilience_client_policy_reload_failures_total{channel=\"test-channel\"} 0\n");
}

// The text of a small case, exactly (but for the buckets and sum of the
// latency histograms): a retried method with a breaker that needed one
// retry, and a stream of a method without a policy.
TEST_F(ClientMetricsTest, AppendMetricsText) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                          "method": "Unary"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                      "backoffMultiplier": 1, "perAttemptTimeout": "5s",
                      "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"sre": {}}}]})");
  service_.FailNext(1);
  EXPECT_TRUE(Unary().ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.ok());
  const std::string text = Render();
  // $PORT: the server's port, in the endpoint label (breakers per endpoint).
  EXPECT_EQ(WithoutTimings(text, kDuration), absl::StrReplaceAll(R"(# HELP grpc_resilience_client_calls_total Calls the application made, by the status it finally got (one per call, however many attempts it took).
# TYPE grpc_resilience_client_calls_total counter
grpc_resilience_client_calls_total{grpc_method="/resilience.test.TestService/ServerStream",channel="test-channel",grpc_code="OK"} 1
grpc_resilience_client_calls_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",grpc_code="OK"} 1
# HELP grpc_resilience_client_attempts_total Attempts made: each attempt of a retried call, the one attempt of any other call.
# TYPE grpc_resilience_client_attempts_total counter
grpc_resilience_client_attempts_total{grpc_method="/resilience.test.TestService/ServerStream",channel="test-channel"} 1
grpc_resilience_client_attempts_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 2
# HELP grpc_resilience_client_retries_total Attempts after the first.
# TYPE grpc_resilience_client_retries_total counter
grpc_resilience_client_retries_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 1
# HELP grpc_resilience_client_retries_refused_total Retries the policy allowed but not made: retry budget spent, or the server's pushback.
# TYPE grpc_resilience_client_retries_refused_total counter
grpc_resilience_client_retries_refused_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",reason="budget"} 0
grpc_resilience_client_retries_refused_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",reason="pushback"} 0
# HELP grpc_resilience_client_unretried_calls_total Calls of a retried method passed through without retry (not from a generated stub).
# TYPE grpc_resilience_client_unretried_calls_total counter
grpc_resilience_client_unretried_calls_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 0
# HELP grpc_resilience_client_local_rejections_total Attempts failed here without reaching the server, by cause.
# TYPE grpc_resilience_client_local_rejections_total counter
grpc_resilience_client_local_rejections_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",cause="breaker"} 0
# HELP grpc_resilience_client_attempt_timeouts_total Attempts ended by their per-attempt timeout (not the call's deadline).
# TYPE grpc_resilience_client_attempt_timeouts_total counter
grpc_resilience_client_attempt_timeouts_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 0
# HELP grpc_resilience_client_breaker_state 1 for the circuit breaker's current state, 0 for the other two.
# TYPE grpc_resilience_client_breaker_state gauge
grpc_resilience_client_breaker_state{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",state="closed"} 1
grpc_resilience_client_breaker_state{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",state="open"} 0
grpc_resilience_client_breaker_state{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",state="half-open"} 0
# HELP grpc_resilience_client_breaker_drop_probability The share of calls the breaker rejects now (SRE: its drop probability; three-state: 1 when open).
# TYPE grpc_resilience_client_breaker_drop_probability gauge
grpc_resilience_client_breaker_drop_probability{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 0
# HELP grpc_resilience_client_breaker_transitions_total Circuit breaker state changes.
# TYPE grpc_resilience_client_breaker_transitions_total counter
grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="closed",to="open"} 0
grpc_resilience_client_breaker_transitions_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",from="open",to="closed"} 0
# HELP grpc_resilience_client_breaker_rejections_waived_total Attempts the method's breaker would have rejected, let through because the service as a whole is not failing (its per-endpoint breakers).
# TYPE grpc_resilience_client_breaker_rejections_waived_total counter
grpc_resilience_client_breaker_rejections_waived_total{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 0
# HELP grpc_resilience_client_endpoint_breakers Endpoints by the state of their breaker: one series per endpoint (1 in its state, 0 in the others) for the first 16 by name, the rest summed under endpoint="other".
# TYPE grpc_resilience_client_endpoint_breakers gauge
grpc_resilience_client_endpoint_breakers{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",endpoint="ipv4:127.0.0.1:$PORT",state="closed"} 1
grpc_resilience_client_endpoint_breakers{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",endpoint="ipv4:127.0.0.1:$PORT",state="open"} 0
grpc_resilience_client_endpoint_breakers{grpc_method="/resilience.test.TestService/Unary",channel="test-channel",endpoint="ipv4:127.0.0.1:$PORT",state="half-open"} 0
# HELP grpc_resilience_client_call_duration_seconds Call latency as the application saw it, from start to final status, retries and backoff included.
# TYPE grpc_resilience_client_call_duration_seconds histogram
grpc_resilience_client_call_duration_seconds_count{grpc_method="/resilience.test.TestService/ServerStream",channel="test-channel"} 1
grpc_resilience_client_call_duration_seconds_count{grpc_method="/resilience.test.TestService/Unary",channel="test-channel"} 1
# HELP grpc_resilience_client_policy_generation The generation of the channel's policies in force: 1 as created, one more per update.
# TYPE grpc_resilience_client_policy_generation gauge
grpc_resilience_client_policy_generation{channel="test-channel"} 1
# HELP grpc_resilience_client_policy_reload_failures_total Policy files that failed to load on a reload (nothing changed).
# TYPE grpc_resilience_client_policy_reload_failures_total counter
grpc_resilience_client_policy_reload_failures_total{channel="test-channel"} 0
)", {{"$PORT", absl::StrCat(server_->port())}}));
  // Every bucket line, cumulative up to le="+Inf" = the count.
  for (const char* method : {kServerStream, kUnary}) {
    const std::string prefix = absl::StrCat(kDuration, "_bucket{", "grpc_method=\"", method,
                                            "\",channel=\"test-channel\",le=");
    EXPECT_EQ(LinesStartingWith(text, prefix), 15) << method;
    EXPECT_THAT(text, HasSubstr(absl::StrCat(prefix, "\"+Inf\"} 1\n")));
  }
}

// Two channels' metrics in one text, told apart by their channel label.
TEST_F(ClientMetricsTest, TwoChannelsInOneText) {
  Connect("{}");
  EXPECT_TRUE(Unary().ok());
  std::shared_ptr<ClientResilience> first = resilience_;
  ClientResilience::Options options;
  options.name = "second";
  ConnectWith("{}", options);
  EXPECT_TRUE(Unary().ok());
  PrometheusText text;
  first->AppendMetrics(text);
  resilience_->AppendMetrics(text);
  EXPECT_TRUE(text.status().ok()) << text.status();
  const std::string body = text.Finish();
  EXPECT_THAT(body, HasSubstr("grpc_resilience_client_calls_total{grpc_method=\"/resilience.test."
                              "TestService/Unary\",channel=\"test-channel\",grpc_code=\"OK\"} 1\n"
                              "grpc_resilience_client_calls_total{grpc_method=\"/resilience.test."
                              "TestService/Unary\",channel=\"second\",grpc_code=\"OK\"} 1\n"));
}

// promtool accepts a real exposition of every client family.
TEST_F(ClientMetricsTest, PromtoolAcceptsTheText) {
  RESILIENCE_SKIP_WITHOUT_PROMTOOL();
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                          "method": "Unary"}],
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                      "backoffMultiplier": 1, "perAttemptTimeout": "5s",
                      "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"threeState": {}}}]})");
  service_.FailNext(3);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(Unary().ok());
  EXPECT_TRUE(MakeCall(*stub_, CallType::kBidi, Flavour::kSync).status.ok());
  ExpectPromtoolAccepts(Render());
}

}  // namespace
}  // namespace resilience::testing
