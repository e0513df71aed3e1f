// The library's endpoint picker (loadBalancingConfig: resilience_p2c) on a
// channel to three in-process replicas: a replica that fails, from the
// start or in the middle of the traffic, costs no call; retries go to
// another replica; an operator's forced-open endpoint gets no attempt, on a
// method with retries or without; the status shows each endpoint; targets
// the library does not resolve keep gRPC's policy, with a warning.
// Real time (gRPC's own timers), bounded loops.

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/replicas_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using testing::kFailing;
using testing::kUnary;
using testing::MustLoad;
using ::testing::HasSubstr;

// The README's replica file with the picker first; short backoffs.
constexpr char kRouted[] = R"({
  "loadBalancingConfig": [{"resilience_p2c": {"slowStart": "1s"}}, {"round_robin": {}}],
  "methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "timeout": "2s",
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.01s",
                    "backoffMultiplier": 2, "perAttemptTimeout": "0.5s",
                    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
    "breaker": {"threeState": {}}}]})";

// The same without retries: the picker still takes every call.
constexpr char kRoutedNoRetries[] = R"({
  "loadBalancingConfig": [{"resilience_p2c": {}}],
  "methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "timeout": "2s", "breaker": {"threeState": {}}}]})";

class RoutedReplicasTest : public testing::ReplicasTest {
 protected:
  std::string Endpoint(int i) const {
    return absl::StrCat("ipv4:127.0.0.1:", replicas_[i].server->port());
  }

  // Calls `n` times; how many failed.
  int Failures(int n) {
    int failed = 0;
    for (int i = 0; i < n; ++i) failed += Call().ok() ? 0 : 1;
    return failed;
  }

  // Calls `calls` times from each of 4 threads at once, running `meanwhile`
  // on this thread after the first quarter; how many failed.
  int ConcurrentFailures(int calls, const std::function<void()>& meanwhile = [] {}) {
    std::atomic<int> failed{0};
    std::atomic<int> made{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < calls; ++i) {
          failed += Call().ok() ? 0 : 1;
          ++made;
        }
      });
    }
    testing::Eventually([&] { return made.load() >= calls; }, absl::Seconds(30));
    meanwhile();
    for (std::thread& t : threads) t.join();
    return failed.load();
  }

  std::vector<RoutedEndpointStatus> Routed() {
    StatusReport report;
    channel_.resilience->AppendStatus(report);
    return report.routed_endpoints;
  }
};

TEST_F(RoutedReplicasTest, AReplicaFailingFromTheStartCostsNoCall) {
  Start(kFailing);
  Connect(kRouted);
  EXPECT_EQ(Failures(300), 0);
  // Every call that met the bad replica was retried on another one: the
  // bad one saw at most a few attempts (one per call that drew it, then its
  // cost keeps it out, bar its breaker's probes).
  const ClientMethodStats stats = channel_.resilience->Stats(kUnary);
  EXPECT_EQ(stats.calls, 300);
  EXPECT_LT(Reached(1), 30) << "attempts that went to the failing replica";
  EXPECT_GT(Reached(0), 100);
  EXPECT_GT(Reached(2), 100);
  // No retry went back to the replica that had just failed.
  EXPECT_EQ(stats.retries, Reached(1)) << "each failure retried exactly once, elsewhere";
}

// Four callers at once, so that calls in flight spread the load over the
// three replicas (one caller at a time would go to the fastest); the
// middle one starts failing while they call.
TEST_F(RoutedReplicasTest, AReplicaThatStartsFailingMidTrafficCostsNoCall) {
  Start();
  Connect(kRouted);
  int64_t before = 0;
  EXPECT_EQ(ConcurrentFailures(200,
                               [&] {
                                 before = Reached(1);
                                 ASSERT_TRUE(
                                     replicas_[1].resilience->Update(MustLoad(kFailing)).ok());
                               }),
            0);
  EXPECT_GT(before, 0) << "the middle replica served before it failed";
  EXPECT_GT(Reached(1), before) << "it failed attempts, which were retried elsewhere";
}

TEST_F(RoutedReplicasTest, AForcedOpenEndpointGetsNoAttempt) {
  Start();
  Connect(kRouted);
  EXPECT_EQ(Failures(60), 0);
  ASSERT_TRUE(
      channel_.resilience->ControlEndpointBreaker(kUnary, Endpoint(1), BreakerCommand::kForceOpen)
          .ok());
  const int64_t before = Reached(1);
  EXPECT_EQ(Failures(200), 0);
  EXPECT_EQ(Reached(1), before);
  std::vector<RoutedEndpointStatus> rows = Routed();
  ASSERT_EQ(rows.size(), 3u);
  int64_t picks = 0;
  for (const RoutedEndpointStatus& row : rows) picks += row.picks;
  EXPECT_EQ(picks, 260);
  // Back to automatic: it serves again.
  ASSERT_TRUE(
      channel_.resilience->ControlEndpointBreaker(kUnary, Endpoint(1), BreakerCommand::kAutomatic)
          .ok());
  EXPECT_TRUE(testing::Eventually([&] { return Call().ok() && Reached(1) > before; },
                                  absl::Seconds(20)));
}

// Only an enforcing breaker gates the picker (docs/shadow-mode.md): with
// breaker.enforcement switched to shadow, an endpoint whose breaker is
// forced open gets attempts again; back to enforce, none.
TEST_F(RoutedReplicasTest, AShadowEndpointBreakerTakesNoEndpointOut) {
  Start();
  Connect(kRouted);
  EXPECT_EQ(Failures(30), 0);
  ASSERT_TRUE(
      channel_.resilience->ControlEndpointBreaker(kUnary, Endpoint(1), BreakerCommand::kForceOpen)
          .ok());
  ASSERT_TRUE(channel_.resilience
                  ->SetEnforcement(kUnary, EnforcedPolicy::kBreaker, EnforcementMode::kShadow)
                  .ok());
  const int64_t before = Reached(1);
  // Picked again (p2c weighs it back in as it would a recovered one).
  EXPECT_TRUE(testing::Eventually([&] { return Call().ok() && Reached(1) > before; },
                                  absl::Seconds(20)))
      << "the forced-open endpoint is picked in shadow mode";
  ASSERT_TRUE(channel_.resilience
                  ->SetEnforcement(kUnary, EnforcedPolicy::kBreaker, EnforcementMode::kEnforce)
                  .ok());
  const int64_t enforced = Reached(1);
  EXPECT_EQ(Failures(100), 0);
  EXPECT_EQ(Reached(1), enforced);
}

TEST_F(RoutedReplicasTest, AMethodWithoutRetriesIsRoutedToo) {
  Start();
  Connect(kRoutedNoRetries);
  EXPECT_EQ(Failures(60), 0);
  ASSERT_GT(Reached(1), 0);
  ASSERT_TRUE(
      channel_.resilience->ControlEndpointBreaker(kUnary, Endpoint(1), BreakerCommand::kForceOpen)
          .ok());
  const int64_t before = Reached(1);
  EXPECT_EQ(Failures(100), 0);
  EXPECT_EQ(Reached(1), before);
}

TEST_F(RoutedReplicasTest, EveryEndpointForcedOpenRefusesTheCallLocally) {
  Start();
  Connect(kRouted);
  EXPECT_EQ(Failures(60), 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(channel_.resilience
                    ->ControlEndpointBreaker(kUnary, Endpoint(i), BreakerCommand::kForceOpen)
                    .ok());
  }
  const grpc::Status status = Call();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("every endpoint of the channel is forced open"));
}

TEST_F(RoutedReplicasTest, TheStatusShowsEachEndpoint) {
  Start(kFailing);
  Connect(kRouted);
  EXPECT_EQ(Failures(100), 0);
  std::vector<RoutedEndpointStatus> rows = Routed();
  ASSERT_EQ(rows.size(), 3u);
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.endpoint < b.endpoint; });
  for (const RoutedEndpointStatus& row : rows) {
    EXPECT_EQ(row.channel, Target());
    EXPECT_EQ(row.in_flight, 0);
    EXPECT_NE(row.out, "not connected") << row.endpoint;
    if (row.endpoint == Endpoint(1)) {
      EXPECT_GT(row.error_share, 0.5) << row.endpoint;
    } else {
      EXPECT_GT(row.picks, 30) << row.endpoint;
      EXPECT_GT(row.latency, absl::ZeroDuration()) << row.endpoint;
    }
  }
  StatusReport report;
  channel_.resilience->AppendStatus(report);
  EXPECT_THAT(report.ToJson(), HasSubstr("\"routed_endpoints\":[{\"channel\""));
  for (const RoutedEndpointStatus& row : rows) EXPECT_EQ(row.method, kUnary);
}

// Throttled replicas report their load to the picker's attempts, which ask
// for it (resilience-orca); a server sends no report to a call that does not.
TEST_F(RoutedReplicasTest, ThePickerHearsTheLoadTheReplicasReport) {
  constexpr char kThrottled[] = R"({"methodConfig": [
    {"name": [{"service": "resilience.test.TestService"}], "throttle": {"maxConcurrency": 4}}]})";
  Start(kThrottled, ServerResilienceOptions().not_serving_grace, kThrottled);
  Connect(kRouted);
  EXPECT_EQ(Failures(60), 0);
  std::vector<RoutedEndpointStatus> rows = Routed();
  ASSERT_EQ(rows.size(), 3u);
  for (const RoutedEndpointStatus& row : rows) {
    ASSERT_TRUE(row.load.has_value()) << row.endpoint << " reported no load";
    EXPECT_GE(*row.load, 0.0) << row.endpoint;
    EXPECT_LE(*row.load, 1.0) << row.endpoint;
  }
}

// A dns: name (here "localhost", which may also resolve to ::1) is resolved
// by the library; calls work as with gRPC's resolver.
TEST_F(RoutedReplicasTest, ANameTargetIsResolvedByTheLibrary) {
  Start();
  ResilientChannel made =
      CreateResilientChannel(absl::StrCat("dns:///localhost:", replicas_[0].server->port()),
                             grpc::InsecureChannelCredentials(), MustLoad(kRouted));
  EXPECT_TRUE(made.warnings.empty()) << absl::StrJoin(made.warnings, "; ");
  channel_ = made;
  stub_ = testing::TestService::NewStub(made.channel);
  EXPECT_EQ(Failures(30), 0);
  EXPECT_EQ(Reached(0), 30);
  EXPECT_FALSE(Routed().empty());
}

TEST_F(RoutedReplicasTest, ATargetTheLibraryDoesNotResolveKeepsGrpcsPolicyWithAWarning) {
  ResilientChannel made = CreateResilientChannel(
      "unix:/tmp/no-such-socket", grpc::InsecureChannelCredentials(), MustLoad(kRouted));
  EXPECT_THAT(made.warnings,
              ::testing::ElementsAre(
                  "channel unix:/tmp/no-such-socket: loadBalancingConfig's resilience_p2c is not "
                  "applied: target \"unix:/tmp/no-such-socket\": scheme \"unix\" is not resolved "
                  "by the library (ipv4:, ipv6:, dns: and host:port are); gRPC's round_robin "
                  "routes every call"));
}

}  // namespace
}  // namespace resilience
