// One channel to three in-process replicas (ipv4:a,b,c) built the way the
// README builds a replicated service: the policy file's load balancing and
// health reach gRPC, so one bad replica stops getting calls: one whose
// health service says NOT_SERVING (or that begins to drain) is skipped, a
// failing one is ejected by an outlier detection the file writes; none is
// derived, and a failing replica leaves the other two even shares.
// Real time (gRPC's own timers), bounded loops.

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpc_resilience/client.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/client_interceptors/replicas_fixture.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/recording_events.h"

namespace resilience {
namespace {

using resilience::test::Req;
using resilience::test::Resp;
using resilience::test::TestService;
using testing::GuardedServer;
using testing::HandlerRuns;
using testing::StartGuardedServer;
using testing::SyncEchoService;
using ::testing::HasSubstr;

using testing::kFailing;
using testing::kUnary;
using testing::MustLoad;
using testing::ReplicasTest;

// Issue 40: one replica of three fails every call (its health says
// SERVING), the other two answer NOT_FOUND to most calls (a cache's misses:
// answers, not failures), and the client has the README's replica file
// (round_robin, health checking, retries, a three-state breaker; here with
// short backoffs and its window in 0.1 s buckets). Each healthy replica serves about half of what the two
// serve. gRPC 1.51's outlier detection counts NOT_FOUND as a failure: the one
// derived from the breaker until then ejected two replicas of three at its
// first interval (maxEjectionPercent 50 lets a second go at 33 %) for 30 s,
// and one replica served everything (cache_client: 20,739 and 329 Gets).
TEST_F(ReplicasTest, AFailingReplicaLeavesTheOtherTwoEvenShares) {
  Start(kFailing, ServerResilienceOptions().not_serving_grace,
        R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
            "faultInjection": {"abortCode": "NOT_FOUND", "abortFraction": 0.8, "seed": 7}}]})");
  Connect(R"({"loadBalancingConfig": [{"round_robin": {}}],
              "healthCheckConfig": {"serviceName": "resilience.test.TestService"},
              "methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                "timeout": "2s",
                "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "1s",
                                "initialBackoff": "0.002s", "maxBackoff": "0.005s",
                                "backoffMultiplier": 2,
                                "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
                "breaker": {"threeState": {"window": "1s", "buckets": 10,
                                           "openDuration": "30s"}}}]})");
  ASSERT_TRUE(testing::Eventually([&] {
    Call();
    return Reached(0) > 0 && Reached(1) > 0 && Reached(2) > 0;
  }));
  // Long enough for several ejection intervals of the former derivation.
  const absl::Time settled = absl::Now() + absl::Milliseconds(500);
  while (absl::Now() < settled) Call();

  const int64_t a_before = Reached(0);
  const int64_t c_before = Reached(2);
  for (int i = 0; i < 600; ++i) Call();
  const int64_t a = Reached(0) - a_before;
  const int64_t c = Reached(2) - c_before;
  std::printf("healthy replicas reached by 600 calls: %lld and %lld\n",
              static_cast<long long>(a), static_cast<long long>(c));
  ASSERT_GE(a + c, 300) << "the healthy replicas served few of the calls";
  EXPECT_GE(a, (a + c) * 3 / 10) << a << " of " << a + c;
  EXPECT_GE(c, (a + c) * 3 / 10) << c << " of " << a + c;
}

// An outlier detection the file writes (what the library derived from the
// breaker until issue 40: interval 0.1 s = window / buckets, ejection 30 s =
// openDuration) ejects the replica that fails every call (its health service
// says SERVING); the breaker, at 1/3 failures, never opens, so nothing is
// rejected locally.
TEST_F(ReplicasTest, AnOutlierDetectionOfTheFileEjectsTheFailingReplica) {
  Start(kFailing);
  Connect(R"({"loadBalancingConfig": [{"outlier_detection_experimental": {
                "interval": "0.1s", "baseEjectionTime": "30s", "maxEjectionTime": "60s",
                "maxEjectionPercent": 50,
                "failurePercentageEjection": {"threshold": 49, "enforcementPercentage": 100,
                                              "minimumHosts": 2, "requestVolume": 2},
                "childPolicy": [{"round_robin": {}}]}}],
              "healthCheckConfig": {"serviceName": "resilience.test.TestService"},
              "methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                "breaker": {"threeState": {"failureRateThreshold": 0.5, "minRequests": 10,
                                           "window": "1s", "buckets": 10,
                                           "openDuration": "30s"}}}]})");
  auto aborted = [&] {
    return static_cast<int>(replicas_[1].resilience->Stats(kUnary).faults_aborted);
  };
  ASSERT_TRUE(CallUntilQuiet(aborted, 300, absl::Seconds(10)))
      << "the failing replica kept getting calls: " << aborted();
  EXPECT_GT(aborted(), 0);  // it was in the rotation before

  const int bad_before = aborted();
  const std::array<int, 3> before = {runs_[0].total(), runs_[1].total(), runs_[2].total()};
  int ok = 0;
  for (int i = 0; i < 300; ++i) ok += Call().ok();
  EXPECT_EQ(ok, 300);
  EXPECT_EQ(aborted(), bad_before);
  EXPECT_EQ(runs_[1].total(), 0);  // its handler never ran
  EXPECT_GT(runs_[0].total(), before[0]);
  EXPECT_GT(runs_[2].total(), before[2]);
  EXPECT_EQ(channel_.resilience->Stats(kUnary).rejected_by_breaker, 0);
}

// healthCheckConfig: a replica whose health service says NOT_SERVING gets
// no call; SERVING again, it is back in the rotation.
TEST_F(ReplicasTest, HealthCheckingSkipsTheReplicaThatIsNotServing) {
  Start();
  Connect(R"({"loadBalancingConfig": [{"round_robin": {}}],
              "healthCheckConfig": {"serviceName": "resilience.test.TestService"}})");
  auto served = [&] { return runs_[1].total(); };
  ASSERT_TRUE(testing::Eventually([&] {
    Call();
    return runs_[1].total() > 0 && runs_[0].total() > 0 && runs_[2].total() > 0;
  }));

  ASSERT_TRUE(replicas_[1].resilience->SetServing(replicas_[1].server->server(), false));
  ASSERT_TRUE(CallUntilQuiet(served, 100, absl::Seconds(5)));
  const int before = served();
  int ok = 0;
  for (int i = 0; i < 300; ++i) ok += Call().ok();
  EXPECT_EQ(ok, 300);
  EXPECT_EQ(served(), before);

  ASSERT_TRUE(replicas_[1].resilience->SetServing(replicas_[1].server->server(), true));
  EXPECT_TRUE(testing::Eventually([&] {
    Call();
    return served() > before;
  }, absl::Seconds(5)));
}

// Issue 40 item 1: a healthCheckConfig.serviceName no replica's health
// service knows (a typo): gRPC 1.51 takes SERVICE_UNKNOWN as NOT_SERVING and
// every call fails "backend unhealthy". The client checks the name at each
// endpoint and says so, naming the name and the endpoint, in its events (the
// log) and its status report (the status page).
TEST_F(ReplicasTest, AnUnknownHealthServiceNameIsFoundAndReported) {
  Start();
  auto events = std::make_shared<testing::RecordingEvents>();
  ResilientChannelOptions options;
  options.resilience.name = "typo";
  options.resilience.events = events;
  constexpr char kTypo[] = "resilience.test.TestServce";
  channel_ = CreateResilientChannel(
      Target(), grpc::InsecureChannelCredentials(),
      MustLoad(absl::StrCat(R"({"loadBalancingConfig": [{"round_robin": {}}],
          "healthCheckConfig": {"serviceName": ")", kTypo, R"("},
          "methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                            "timeout": "2s"}]})")),
      std::move(options));
  stub_ = TestService::NewStub(channel_.channel);
  grpc::Status last;
  StatusReport report;
  ASSERT_TRUE(testing::Eventually([&] {
    last = Call();
    report = StatusReport();
    channel_.resilience->AppendStatus(report);
    return report.health_checks.size() == 3;
  })) << last.error_message();
  EXPECT_EQ(last.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(last.error_message(), HasSubstr("backend unhealthy"));
  std::vector<std::string> endpoints;
  for (const HealthCheckStatus& h : report.health_checks) {
    EXPECT_EQ(h.channel, "typo");
    EXPECT_EQ(h.service, kTypo);
    EXPECT_THAT(h.problem, HasSubstr("unknown to the server's health service"));
    endpoints.push_back(h.endpoint);
  }
  std::vector<std::string> expected;
  for (const GuardedServer& r : replicas_) {
    expected.push_back(absl::StrCat("ipv4:127.0.0.1:", r.server->port()));
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(endpoints, expected);  // sorted by name
  EXPECT_THAT(report.ToJson(), HasSubstr(kTypo));
  ASSERT_TRUE(testing::Eventually([&] { return events->lines().size() == 3; }));
  for (const std::string& line : events->lines()) {
    EXPECT_THAT(line, HasSubstr("health check on typo at endpoint ipv4:127.0.0.1:"));
    EXPECT_THAT(line, HasSubstr(absl::StrCat("service name \"", kTypo,
                                             "\" unknown to the server's health service")));
  }
}

// A drain reports NOT_SERVING as it begins: the client leaves the replica
// while it still refuses calls (UNAVAILABLE), long before its grace period
// ends, and the Watch stream open on it does not hold the drain up.
TEST_F(ReplicasTest, ADrainingReplicaLeavesTheRotationBeforeItsGracePeriodEnds) {
  Start();
  Connect(R"({"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {}})");
  ASSERT_TRUE(testing::Eventually([&] {
    Call();
    return runs_[1].total() > 0;
  }));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  const absl::Time start = absl::Now();
  bool all_done = false;
  std::thread drain([&] { all_done = replicas_[1].resilience->Drain(deadline); });
  auto refused = [&] {
    return static_cast<int>(
        replicas_[1].resilience->Stats(kUnary).CallsWithCode(grpc::StatusCode::UNAVAILABLE));
  };
  const bool left = CallUntilQuiet(refused, 200, absl::Seconds(5));
  const absl::Duration took = absl::Now() - start;
  drain.join();
  replicas_[1].resilience->ReleaseRefusedCalls();
  EXPECT_TRUE(left);
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_TRUE(all_done);
  EXPECT_LT(absl::Now(), deadline);  // the Watch stream did not keep it waiting
}

// A drain reports NOT_SERVING and still serves for not_serving_grace: the
// health-checking client leaves the replica without one call refused, and a
// call that picked it before hearing NOT_SERVING (here: a channel that does
// not check health) is served, not refused; after the grace new calls are
// refused as before. The source of the rolling restart's failed calls.
TEST_F(ReplicasTest, ADrainingReplicaServesDuringItsNotServingGrace) {
  // The checks below must fit in the grace (asserted: still_in_grace); they
  // took up to 1.06 s beside 3 busy loops without a sanitizer: 6 s, not 3.
  constexpr absl::Duration kGrace = absl::Seconds(6);
  Start("{}", kGrace);
  Connect(R"({"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {}})");
  ASSERT_TRUE(testing::Eventually([&] {
    Call();
    return runs_[1].total() > 0;
  }));
  auto direct = TestService::NewStub(replicas_[1].server->NewChannel());
  auto call_direct = [&] {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    Resp response;
    return direct->Unary(&context, request, &response);
  };
  ASSERT_TRUE(call_direct().ok());
  auto refused = [&] {
    return static_cast<int>(
        replicas_[1].resilience->Stats(kUnary).CallsWithCode(grpc::StatusCode::UNAVAILABLE));
  };
  ServerResilience& bad = *replicas_[1].resilience;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(20);
  bool all_done = false;
  std::thread drain([&] { all_done = bad.Drain(deadline); });
  // The health-checking channel leaves it; nothing is refused meanwhile.
  const bool left = CallUntilQuiet([&] { return runs_[1].total(); }, 200, absl::Seconds(5));
  const int served_before = runs_[1].total();
  const grpc::Status during = call_direct();
  const bool still_in_grace = !bad.draining();
  const absl::Duration in_grace_for = absl::Now() - start;
  std::printf("the checks in the grace took %s\n", absl::FormatDuration(in_grace_for).c_str());
  const int refused_in_grace = refused();
  // Then it refuses, as a drain without grace does.
  const bool refusing = testing::Eventually([&] { return bad.draining(); });
  const absl::Duration grace_took = absl::Now() - start;
  // Refused at once, or (arriving in or after the drain's last kParkWindow,
  // as on a busy machine) parked until ReleaseRefusedCalls(): refused either
  // way, so the call runs beside the rest of the drain.
  grpc::Status after;
  std::thread after_call([&] { after = call_direct(); });
  drain.join();
  bad.ReleaseRefusedCalls();
  after_call.join();

  EXPECT_TRUE(left);
  ASSERT_TRUE(still_in_grace) << "the checks took " << in_grace_for << ", longer than the grace";
  EXPECT_TRUE(during.ok()) << during.error_message();
  EXPECT_EQ(runs_[1].total(), served_before + 1);  // its handler ran
  EXPECT_EQ(refused_in_grace, 0);
  EXPECT_TRUE(refusing);
  EXPECT_GE(grace_took, kGrace);
  EXPECT_EQ(after.error_code(), grpc::StatusCode::UNAVAILABLE) << after.error_message();
  EXPECT_TRUE(all_done);
  EXPECT_LT(absl::Now(), deadline);
}

// What gRPC 1.51's core on this machine takes: every config the policy
// loader accepts makes a working channel (grpclb with a config falls back
// to the addresses); grpclb by name, which it refuses, fails the calls of a
// plain channel.
TEST_F(ReplicasTest, EveryAcceptedConfigWorksOnGrpc151) {
  Start();
  const char* accepted[] = {
      R"({"loadBalancingConfig": [{"pick_first": {}}]})",
      R"({"loadBalancingPolicy": "round_robin"})",
      R"({"loadBalancingConfig": [{"grpclb": {"childPolicy": [{"round_robin": {}}],
                                              "serviceName": "s"}}]})",
      R"({"loadBalancingConfig": [{"outlier_detection_experimental": {
            "interval": "0.5s", "baseEjectionTime": "10s", "maxEjectionTime": "30s",
            "maxEjectionPercent": 50,
            "successRateEjection": {"stdevFactor": 1900, "enforcementPercentage": 100,
                                    "minimumHosts": 5, "requestVolume": 100},
            "failurePercentageEjection": {"threshold": 50, "enforcementPercentage": 100,
                                          "minimumHosts": 2, "requestVolume": 5},
            "childPolicy": [{"outlier_detection_experimental": {
                "childPolicy": [{"round_robin": {}}]}}]}}],
          "healthCheckConfig": {"serviceName": ""}})",
  };
  for (const char* policy : accepted) {
    Connect(policy);
    for (int i = 0; i < 6; ++i) {
      const grpc::Status status = Call();
      EXPECT_TRUE(status.ok()) << policy << ": " << status.error_message();
    }
  }
  // Refused by the loader: grpclb by name fails the calls of a plain channel.
  // (ring_hash_experimental is not tried: a call on such a channel crashes
  // gRPC 1.51, SIGSEGV in the channel's WorkSerializer, seen under gdb.)
  // By name gRPC refuses it itself ("requires a config").
  for (const char* refused : {R"({"loadBalancingPolicy": "grpclb"})"}) {
    grpc::ChannelArguments args;
    args.SetServiceConfigJSON(refused);
    auto stub = TestService::NewStub(
        grpc::CreateCustomChannel(Target(), grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    Resp response;
    EXPECT_FALSE(stub->Unary(&context, request, &response).ok()) << refused;
  }
}

// A service config already in the channel's arguments is kept whole, as
// before: the warning names the file's settings that are then not applied.
TEST(ReplicasConfigTest, ACallersServiceConfigKeepsWinningWithAWarning) {
  const PolicySet policies = MustLoad(R"({"loadBalancingConfig": [{"round_robin": {}}],
                                          "healthCheckConfig": {}})");
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"loadBalancingConfig": [{"pick_first": {}}]})");
  const std::vector<std::string> warnings = ConfigureBuiltInRetries(policies, args);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "channel arguments: the service config given (GRPC_ARG_SERVICE_CONFIG) is kept "
            "instead of the policies' own, so the policy file's loadBalancingPolicy, "
            "loadBalancingConfig and healthCheckConfig are not applied (the given config's "
            "own are)");
  grpc::ChannelArguments empty;
  EXPECT_TRUE(ConfigureBuiltInRetries(policies, empty).empty());
}

}  // namespace
}  // namespace resilience
