// Breakers per endpoint, end to end: three in-process servers on
// localhost:0 behind one channel with round_robin (set by a channel
// argument), one of them failing every call or hanging. The method's
// breaker trips on the aggregate failure rate, but rejects calls locally
// only when the service as a whole is failing (docs/endpoint-breakers.md).

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/resilient_channel.h"
#include "tests/client_interceptors/scripted_service.h"
#include "tests/testing/recording_events.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kMethod[] = "/resilience.test.TestService/Unary";

// Three attempts, UNAVAILABLE and DEADLINE_EXCEEDED retried, with a retry
// budget that a steady third of failing attempts does not spend (the
// default, 10 tokens and 0.1 back per success, stops retrying after about
// 15 calls of such a fleet: a third of the calls would then fail whatever
// the breaker does); a three-state
// breaker at 25 % that trips on one bad replica of three (the issue's
// measurement: 272 of 300 rejected locally before per-endpoint breakers).
std::string Policy(absl::string_view endpoints) {
  return absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.005s",
                      "backoffMultiplier": 2, "perAttemptTimeout": "0.1s",
                      "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
      "retryBudget": {"maxTokens": 100, "tokenRatio": 1},
      "breaker": {"threeState": {"failureRateThreshold": 0.25, "minRequests": 10}, )",
      endpoints, R"(}}]})");
}

class EndpointBreakersE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (ScriptedService& service : services_) {
      TestServer::Options options;
      options.services.push_back(&service);
      servers_.push_back(TestServer::Start(std::move(options)));
      ASSERT_NE(servers_.back(), nullptr);
      ports_.push_back(servers_.back()->port());
    }
  }

  // One channel to the three servers, round_robin.
  void Connect(const std::string& policy_json) { ConnectTo(policy_json, {0, 1, 2}); }

  // A channel with round_robin to the list of `servers` (indexes into
  // servers_, repeats allowed: each is an entry of round_robin's rotation).
  void ConnectTo(const std::string& policy_json, const std::vector<int>& servers) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    ResilientChannelOptions options;
    options.args.SetLoadBalancingPolicyName("round_robin");
    options.resilience.name = "replicas";
    options.resilience.events = events_;
    std::string target = "ipv4:";
    for (size_t i = 0; i < servers.size(); ++i) {
      absl::StrAppend(&target, i == 0 ? "" : ",", "127.0.0.1:", ports_[servers[i]]);
    }
    made_ = CreateResilientChannel(target, grpc::InsecureChannelCredentials(), *policies,
                                   std::move(options));
    stub_ = resilience::test::TestService::NewStub(made_.channel);
    ASSERT_TRUE(made_.channel->WaitForConnected(
        std::chrono::system_clock::now() + std::chrono::seconds(5)));
  }

  grpc::Status Call() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    resilience::test::Req request;
    request.set_text("hi");
    resilience::test::Resp response;
    return stub_->Unary(&context, request, &response);
  }

  // `n` calls in a row: how many ended OK.
  int Calls(int n) {
    int ok = 0;
    for (int i = 0; i < n; ++i) ok += Call().ok() ? 1 : 0;
    return ok;
  }

  ScriptedService services_[3];
  std::vector<std::unique_ptr<TestServer>> servers_;
  std::vector<int> ports_;  // servers_' ports, kept after a Shutdown()
  std::shared_ptr<RecordingEvents> events_ = std::make_shared<RecordingEvents>();
  ResilientChannel made_;
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

TEST_F(EndpointBreakersE2eTest, OneFailingReplicaOfThreeNeverCausesLocalRejections) {
  services_[2].FailNext(1 << 30);
  Connect(Policy(R"("endpoints": {})"));
  constexpr int kCalls = 300;
  const int ok = Calls(kCalls);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_GE(ok, 299) << "at least 99.5 % OK";
  EXPECT_EQ(stats.rejected_by_breaker, 0) << "at most 0.1 % rejected locally";
  // The method's breaker did trip on the aggregate: its rejections were waived.
  EXPECT_GE(stats.Transitions(BreakerState::kClosed, BreakerState::kOpen), 1);
  EXPECT_GT(stats.breaker_rejections_waived, 0);
  // Round robin on gRPC 1.51 advances its pick per call, our re-issued
  // attempts included: with one caller, a retry after the bad replica's
  // failure always goes to another replica (never two attempts of a call on
  // the bad one), so every failed attempt is followed by a success.
  EXPECT_EQ(stats.retries, services_[2].handled());
  EXPECT_GT(services_[2].handled(), kCalls / 3 - 5);
  EXPECT_EQ(stats.attempts, kCalls + services_[2].handled());
  // Per endpoint: the bad replica's breaker is open, the others closed.
  const std::vector<EndpointBreakerStats> endpoints = made_.resilience->EndpointStats(kMethod);
  ASSERT_EQ(endpoints.size(), 3u);
  const std::string bad = absl::StrCat("ipv4:127.0.0.1:", servers_[2]->port());
  for (const EndpointBreakerStats& e : endpoints) {
    if (e.endpoint == bad) {
      EXPECT_NE(e.breaker.state, BreakerState::kClosed);
      EXPECT_GT(e.refused, 0);
    } else {
      EXPECT_EQ(e.breaker.state, BreakerState::kClosed) << e.endpoint;
      EXPECT_EQ(e.refused, 0);
    }
    EXPECT_GT(e.outcomes, kCalls / 3 - 5);
  }
  EXPECT_THAT(events_->lines(),
              Contains(HasSubstr(absl::StrCat("at endpoint ", bad, " on replicas: closed -> open"))));
  // Metrics: endpoints by state, and the waived rejections.
  PrometheusText text;
  made_.resilience->AppendMetrics(text);
  const std::string exposition = text.Finish();
  const std::string good = endpoints[0].endpoint == bad ? endpoints[1].endpoint : endpoints[0].endpoint;
  EXPECT_THAT(exposition, HasSubstr(absl::StrCat(
                              "grpc_resilience_client_endpoint_breakers{grpc_method=\"", kMethod,
                              "\",channel=\"replicas\",endpoint=\"", good,
                              "\",state=\"closed\"} 1\n")));
  EXPECT_THAT(exposition, HasSubstr(absl::StrCat(
                              "grpc_resilience_client_breaker_rejections_waived_total{grpc_method=\"",
                              kMethod, "\",channel=\"replicas\"} ",
                              stats.breaker_rejections_waived, "\n")));
}

// Issue 40 item 2: the issue's client policy (3 attempts on UNAVAILABLE, a
// three-state breaker with its defaults: 50 % over 20 calls, 5 s open) with
// the default retryBudget (10 tokens, 0.1 back per success). Before, the
// bad replica's failures spent the budget within a few calls and it then
// refused their retries: ~40 of 600 calls failed here (a third of them in
// the issue's concurrent run, whose budget never came back).
std::string DefaultBudgetPolicy() {
  return R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.005s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"threeState": {}}}]})";
}

TEST_F(EndpointBreakersE2eTest, OneFailingReplicaOfThreeSpendsNoRetryBudget) {
  services_[2].FailNext(1 << 30);
  Connect(DefaultBudgetPolicy());
  const int ok = Calls(600);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_GE(ok, 594) << "at least 99 % OK";
  EXPECT_EQ(stats.retry_budget_exhausted, 0);
  EXPECT_EQ(stats.rejected_by_breaker, 0);
  EXPECT_GT(stats.retries, 150);
}

// The new user's case: a replica that starts failing during traffic, its
// breaker's window full of earlier successes (it needs as many failures to
// open: 200, it gets 100 here): its failures are retried from its third in
// a row.
TEST_F(EndpointBreakersE2eTest, AReplicaFailingDuringTrafficIsRetriedBeforeItsBreakerOpens) {
  Connect(DefaultBudgetPolicy());
  ASSERT_EQ(Calls(600), 600);  // 200 successes in each endpoint's window
  services_[2].FailNext(1 << 30);
  const int ok = Calls(300);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_GE(ok, 297) << "at least 99 % OK";
  EXPECT_EQ(stats.retry_budget_exhausted, 0);
  for (const EndpointBreakerStats& e : made_.resilience->EndpointStats(kMethod)) {
    EXPECT_EQ(e.breaker.state, BreakerState::kClosed) << e.endpoint;
  }
}

// round_robin may pick the bad replica for several attempts of one call in
// a row (here its rotation holds it 4 times out of 5; in the issue's run,
// other callers' picks in between bring it back). Such a failure, on a
// replica that fails alone, is a pick the library's own picker would have
// refused: it does not use up maxAttempts, twice at most per call. With one
// caller the rotation is fixed: a call starting at the bad replica's first
// entry makes 3 attempts there (before: failed, every second call) and
// then, after two re-picks, 2 more, the last one to the healthy replica.
TEST_F(EndpointBreakersE2eTest, AttemptsRoundRobinSendsToAReplicaFailingAloneAreRepicks) {
  services_[1].FailNext(1 << 30);
  ConnectTo(DefaultBudgetPolicy(), {0, 1, 1, 1, 1});
  Calls(20);  // every entry connected and picked; the bad replica fails alone
  const int64_t bad_before = services_[1].handled();
  const ClientMethodStats before = made_.resilience->Stats(kMethod);
  EXPECT_EQ(Calls(40), 40);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_EQ(stats.retry_budget_exhausted, 0);
  // Up to 4 failed attempts a call (3 without re-picks), then an answer.
  EXPECT_GT(services_[1].handled() - bad_before, 150);
  EXPECT_LE(stats.attempts - before.attempts, 200);
}

// At a channel's start round_robin sends every pick to the first replica it
// connected, here the failing one (the two others are not up: their
// connections fail). Their addresses are in the target: for 1 s from the
// first outcome they count as serving, so the failing replica fails alone
// from its third failure on and the retry budget refuses nothing (before:
// 5 failures spent it, the second call's retry was refused).
TEST_F(EndpointBreakersE2eTest, AtTheStartReplicasOfTheTargetNotConnectedYetCountAsServing) {
  services_[1].FailNext(1 << 30);
  servers_[0]->Shutdown();
  servers_[2]->Shutdown();
  Connect(DefaultBudgetPolicy());
  EXPECT_EQ(Calls(4), 0);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_EQ(stats.retry_budget_exhausted, 0);
  EXPECT_EQ(services_[1].handled(), 20);  // 5 attempts a call: 3, and 2 re-picks
}

// Every replica failing is a failing service: the budget still bounds the
// retries (4 made, then refused while it stays at or below half).
TEST_F(EndpointBreakersE2eTest, EveryReplicaFailingStillSpendsTheRetryBudget) {
  for (ScriptedService& service : services_) service.FailNext(1 << 30);
  Connect(DefaultBudgetPolicy());
  EXPECT_EQ(Calls(30), 0);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_LE(stats.retries, 6);
  EXPECT_GE(stats.retry_budget_exhausted, 20);
}

// Without per-endpoint breakers (the behaviour before): the same fleet
// makes the method's breaker reject most calls locally.
TEST_F(EndpointBreakersE2eTest, WithoutThemOneBadReplicaCutsOffTheService) {
  services_[2].FailNext(1 << 30);
  Connect(Policy(R"("endpoints": {"enabled": false})"));
  const int ok = Calls(300);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_LT(ok, 200);
  EXPECT_GT(stats.rejected_by_breaker, 100);
  EXPECT_EQ(stats.breaker_rejections_waived, 0);
  EXPECT_TRUE(made_.resilience->EndpointStats(kMethod).empty());
}

// A hung replica (every call far past the per-attempt timeout): the same.
TEST_F(EndpointBreakersE2eTest, OneHungReplicaOfThree) {
  services_[1].SlowNext(1 << 30, absl::Seconds(30));
  Connect(Policy(R"("endpoints": {})"));
  const int ok = Calls(60);
  const ClientMethodStats stats = made_.resilience->Stats(kMethod);
  EXPECT_EQ(ok, 60);
  EXPECT_EQ(stats.rejected_by_breaker, 0);
  EXPECT_GE(stats.attempt_timeouts, 15);
  // gRPC 1.51 mostly names no peer for an attempt that timed out before the
  // server's initial metadata (ClientContext::peer() falls back to the
  // target), and names it when the attempt's stream had reached the
  // transport in time (seen on a busy machine): the hung replica may or may
  // not be an endpoint. Its timeouts with no endpoint are failures which
  // among the others' successes never make the service failing
  // (EndpointBreakers rule (b) wants a run of them); the others stay closed.
  const std::string hung = absl::StrCat("ipv4:127.0.0.1:", servers_[1]->port());
  const std::vector<EndpointBreakerStats> endpoints = made_.resilience->EndpointStats(kMethod);
  int healthy_seen = 0;
  for (const EndpointBreakerStats& e : endpoints) {
    if (e.endpoint == hung) continue;
    ++healthy_seen;
    EXPECT_EQ(e.breaker.state, BreakerState::kClosed) << e.endpoint;
  }
  EXPECT_EQ(healthy_seen, 2);
}

// Every replica failing: local rejections start within 1 s, as with the
// method's breaker alone.
TEST_F(EndpointBreakersE2eTest, AllReplicasFailingRejectLocallyWithinOneSecond) {
  for (ScriptedService& service : services_) service.FailNext(1 << 30);
  Connect(Policy(R"("endpoints": {})"));
  const absl::Time start = absl::Now();
  absl::Time first_rejection = absl::InfiniteFuture();
  for (int i = 0; i < 2000 && absl::Now() - start < absl::Seconds(3); ++i) {
    grpc::Status status = Call();
    if (absl::StrContains(status.error_message(), "rejected locally")) {
      first_rejection = absl::Now();
      break;
    }
  }
  EXPECT_LT(first_rejection - start, absl::Seconds(1));
  for (const EndpointBreakerStats& e : made_.resilience->EndpointStats(kMethod)) {
    EXPECT_EQ(e.breaker.state, BreakerState::kOpen) << e.endpoint;
  }
}

// A channel whose only server is gone: gRPC 1.51 gives its attempts the
// channel's target as their peer (the one address here), so they count
// against that endpoint, whose breaker opens: the method rejects.
TEST_F(EndpointBreakersE2eTest, TheOnlyServerGoneStillRejectsLocally) {
  const int port = servers_[0]->port();
  servers_[0]->Shutdown();
  servers_[0].reset();
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(Policy(R"("endpoints": {})"));
  ASSERT_TRUE(policies.ok());
  const std::string target = absl::StrCat("ipv4:127.0.0.1:", port);
  made_ = CreateResilientChannel(target, grpc::InsecureChannelCredentials(), *policies);
  stub_ = resilience::test::TestService::NewStub(made_.channel);
  int rejected = 0;
  for (int i = 0; i < 40; ++i) {
    rejected += absl::StrContains(Call().error_message(), "rejected locally") ? 1 : 0;
  }
  EXPECT_GT(rejected, 20);
  const std::vector<EndpointBreakerStats> endpoints = made_.resilience->EndpointStats(kMethod);
  ASSERT_EQ(endpoints.size(), 1u);
  EXPECT_EQ(endpoints[0].endpoint, target);
  EXPECT_EQ(endpoints[0].breaker.state, BreakerState::kOpen);
}

// Every replica gone after the channel knew them: attempts reach no server
// (their peer is the target list, "no endpoint"); the method still rejects
// (rule (b)), and no pseudo-endpoint appears.
TEST_F(EndpointBreakersE2eTest, EveryReplicaGoneStillRejectsLocally) {
  Connect(Policy(R"("endpoints": {})"));
  EXPECT_EQ(Calls(30), 30);
  for (auto& server : servers_) server->Shutdown();
  servers_.clear();
  int rejected = 0;
  for (int i = 0; i < 60; ++i) {
    rejected += absl::StrContains(Call().error_message(), "rejected locally") ? 1 : 0;
  }
  EXPECT_GT(rejected, 20);
  for (const EndpointBreakerStats& e : made_.resilience->EndpointStats(kMethod)) {
    EXPECT_THAT(e.endpoint, ::testing::Not(HasSubstr(","))) << e.endpoint;
  }
}

}  // namespace
}  // namespace resilience::testing
