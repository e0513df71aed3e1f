// breaker.recoveryProbe end to end: a real server with the standard health
// service, a channel made by CreateResilientChannel(), real time (gRPC's own
// timers), bounded loops. While the server's health says NOT_SERVING the
// open breaker admits no user call, however long its open period is past;
// SERVING again, the next call goes through and closes it. Probes are
// counted as probes, never as calls.

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpc_resilience/client.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"

namespace resilience {
namespace {

using resilience::test::Req;
using resilience::test::Resp;
using resilience::test::TestService;
using testing::Eventually;
using testing::GuardedServer;
using testing::StartGuardedServer;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// Unary fails UNAVAILABLE while `failing`; counts the handler's runs.
class SwitchableService final : public TestService::Service {
 public:
  grpc::Status Unary(grpc::ServerContext*, const Req*, Resp*) override {
    runs.fetch_add(1);
    return failing.load() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")
                          : grpc::Status::OK;
  }
  std::atomic<bool> failing{false};
  std::atomic<int> runs{0};
};

PolicySet MustLoad(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

class RecoveryProbeE2eTest : public ::testing::Test {
 protected:
  void Start(const std::string& health_name) {
    server_ = StartGuardedServer<TestService>(MustLoad("{}"), &service_);
    ASSERT_NE(server_.server, nullptr);
    ASSERT_TRUE(server_.resilience->SetServing(server_.server->server(), true));
    // Three failures in a row trip it; its open period (0.2 s) is short,
    // so that without health it would admit a call every 0.2 s.
    channel_ = CreateResilientChannel(
        absl::StrCat("ipv4:127.0.0.1:", server_.server->port()),
        grpc::InsecureChannelCredentials(),
        MustLoad(absl::StrCat(
            R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                "breaker": {"threeState": {"consecutiveFailures": 3, "openDuration": "0.2s",
                                           "openDurationMultiplier": 1},
                            "recoveryProbe": {"health": ")",
            health_name, R"(", "interval": "0.05s", "timeout": "0.5s"}}}]})")));
    stub_ = TestService::NewStub(channel_.channel);
  }

  grpc::Status Call() {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    Resp response;
    return stub_->Unary(&context, request, &response);
  }
  // grpc_resilience_client_health_probes_total of kUnary with `breaker` and
  // `outcome`, from the channel's exposition; -1 when it has no such sample.
  int64_t ProbeMetric(absl::string_view breaker, absl::string_view outcome) {
    PrometheusText text;
    channel_.resilience->AppendMetrics(text);
    const std::string body = text.Finish();
    for (absl::string_view line : absl::StrSplit(body, '\n')) {
      if (absl::StartsWith(line, "grpc_resilience_client_health_probes_total{") &&
          absl::StrContains(line, absl::StrCat("grpc_method=\"", kUnary, "\"")) &&
          absl::StrContains(line, absl::StrCat("breaker=\"", breaker, "\"")) &&
          absl::StrContains(line, absl::StrCat("outcome=\"", outcome, "\""))) {
        int64_t value = -1;
        return absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &value) ? value : -1;
      }
    }
    return -1;
  }

  // Calls until one is rejected locally (the breaker is open), at most 50.
  bool CallUntilOpen() {
    for (int i = 0; i < 50; ++i) {
      if (Call().error_code() == grpc::StatusCode::UNAVAILABLE &&
          channel_.resilience->Stats(kUnary).rejected_by_breaker > 0) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }

  SwitchableService service_;
  GuardedServer server_;
  ResilientChannel channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(RecoveryProbeE2eTest, NotServingHoldsTheBreakerOpenAndServingReopensTheWay) {
  Start("resilience.test.TestService");
  service_.failing = true;
  ASSERT_TRUE(server_.resilience->SetServing(server_.server->server(), false));
  ASSERT_TRUE(CallUntilOpen());
  // Probes went, and the breaker knows the server is not serving.
  ASSERT_TRUE(Eventually([&] {
    Call();
    return channel_.resilience->Stats(kUnary).health_probes_not_serving > 0;
  }, absl::Seconds(5)));

  // Five open periods of calls: none reaches the server.
  const int runs_before = service_.runs.load();
  const absl::Time end = absl::Now() + absl::Seconds(1);
  int rejected = 0;
  while (absl::Now() < end) {
    rejected += Call().error_code() == grpc::StatusCode::UNAVAILABLE;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GT(rejected, 20);
  EXPECT_EQ(service_.runs.load(), runs_before) << "a user call went while NOT_SERVING";

  // Back: the next probe says SERVING, the next call goes and closes it.
  service_.failing = false;
  ASSERT_TRUE(server_.resilience->SetServing(server_.server->server(), true));
  ASSERT_TRUE(Eventually([&] { return Call().ok(); }, absl::Seconds(5)));
  const ClientMethodStats stats = channel_.resilience->Stats(kUnary);
  EXPECT_EQ(channel_.resilience->BreakerSnapshotOf(kUnary)->state, BreakerState::kClosed);
  EXPECT_GT(stats.health_probes_serving, 0);
  EXPECT_GE(stats.health_probes, stats.health_probes_serving + stats.health_probes_not_serving);
  // Probes are not attempts: every attempt is a user call's.
  EXPECT_EQ(stats.attempts, stats.calls);
  // The metric counts them by answer (the method's breaker's; answered
  // ones, counted before the breaker hears the answer).
  EXPECT_GE(ProbeMetric("method", "serving"), stats.health_probes_serving);
  EXPECT_GE(ProbeMetric("method", "not_serving") + ProbeMetric("method", "unreachable"),
            stats.health_probes_not_serving);
  EXPECT_GE(ProbeMetric("method", "not_serving"), 1);
  EXPECT_EQ(ProbeMetric("method", "unknown"), 0);
  EXPECT_GE(ProbeMetric("endpoint", "unknown"), 0);  // rendered, per-endpoint breakers are on
}

// A name the server's health service does not know (NOT_FOUND): as without
// probes, the open period ends by itself and a call goes as the half-open
// probe.
TEST_F(RecoveryProbeE2eTest, WithoutAnswerTheOpenPeriodEndsByItself) {
  Start("no.such.Service");
  service_.failing = true;
  ASSERT_TRUE(CallUntilOpen());
  const int runs_before = service_.runs.load();
  EXPECT_TRUE(Eventually([&] {
    Call();
    return service_.runs.load() > runs_before;
  }, absl::Seconds(5)));
  EXPECT_EQ(channel_.resilience->Stats(kUnary).health_probes_not_serving, 0);
  EXPECT_GE(ProbeMetric("method", "unknown"), 1);  // NOT_FOUND
  EXPECT_EQ(ProbeMetric("method", "not_serving"), 0);
  EXPECT_EQ(ProbeMetric("method", "serving"), 0);
}

}  // namespace
}  // namespace resilience
