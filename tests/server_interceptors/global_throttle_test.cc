// throttle.global through the server interceptors, in process, without a
// Redis (a closed port): the scope admits its local share, rejects the rest
// with RESOURCE_EXHAUSTED and a pushback, never runs their handler, and the
// metrics show the local share in use and the rejections by the rate.

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/grpc_common/metadata_keys.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/redis_limits.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/redis_server.h"

namespace resilience {
namespace {

using ::resilience::testing::HandlerRuns;
using ::testing::HasSubstr;
using ::testing::Not;

// A TestService server whose one policy entry has `throttle` (JSON), with
// the Redis store of fleet-wide limits.
testing::GuardedServer StartWithThrottle(const std::string& throttle,
                                         testing::SyncEchoService* service) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      absl::StrCat(R"({"methodConfig":[{"name":[{"service":"resilience.test.TestService"}],)",
                   R"("throttle":)", throttle, "}]}"));
  EXPECT_TRUE(policies.ok()) << policies.status();
  if (!policies.ok()) return {};
  ServerResilienceOptions options;
  options.fleet_limits = RedisFleetLimits();
  return testing::StartGuardedServer<test::TestService>(*std::move(policies), service,
                                                        std::move(options));
}

// The server's metrics text.
std::string Metrics(ServerResilience& resilience) {
  PrometheusText text;
  resilience.AppendMetrics(text);
  return text.Finish();
}

// Whether the metrics come to hold `line` within a few seconds.
bool EventuallyInMetrics(ServerResilience& resilience, const std::string& line) {
  return testing::Eventually([&] { return absl::StrContains(Metrics(resilience), line); });
}

TEST(GlobalThrottleTest, LocalShareWithoutRedisRejectsWithPushbackAndSkipsHandlers) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  // 0.2/s for 2 replicas: a share of 0.1/s (a token per 10 s) and a burst
  // of 1 (of 2).
  HandlerRuns runs;
  testing::SyncEchoService service(&runs);
  testing::GuardedServer started = StartWithThrottle(
      absl::StrCat(R"({"global":{"redis":"127.0.0.1:)", *port,
                   R"(","key":"test","ratePerSecond":0.2,"burst":2,"expectedReplicas":2}})"),
      &service);
  ASSERT_NE(started.server, nullptr);
  // Given the Redis store, the server has nothing to warn about.
  EXPECT_TRUE(started.resilience->warnings().empty());
  auto stub = test::TestService::NewStub(started.server->NewChannel());
  int ok = 0;
  int exhausted = 0;
  std::string pushback;
  std::string message;
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    test::Req request;
    test::Resp response;
    const grpc::Status status = stub->Unary(&context, request, &response);
    if (status.ok()) ++ok;
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
      message = status.error_message();
      auto it = context.GetServerTrailingMetadata().find(kPushbackKey);
      if (it != context.GetServerTrailingMetadata().end()) {
        pushback = std::string(it->second.data(), it->second.size());
      }
    }
  }
  // Five calls well within 10 s: the share's one token, then rejections
  // whose handler never ran.
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(exhausted, 4);
  EXPECT_EQ(runs.total(), 1);
  EXPECT_THAT(message, HasSubstr("/resilience.test.TestService/Unary: global rate limit 0.2/s"));
  EXPECT_FALSE(pushback.empty());
  EXPECT_EQ(started.resilience->Stats("/resilience.test.TestService/Unary").rejected_rate, 4);
  // Redis refused the connection: the local share is what is in use.
  ASSERT_TRUE(EventuallyInMetrics(
      *started.resilience, "grpc_resilience_server_global_limit_transitions_total{key=\"test\","
                           "to=\"local_share\"} 1"));
  const std::string body = Metrics(*started.resilience);
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_global_limit_using_store{key=\"test\"} 0"));
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_global_limit_admitted_total{key=\"test\","
                              "source=\"local_share\"} 1"));
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_rejections_total{grpc_method=\"/"
                              "resilience.test.TestService/Unary\",cause=\"rate\"} 4"));
  started.server->Shutdown();
}

// throttle.perCaller.global without Redis: each caller key its own local
// share, refusals naming the key's fleet-wide rate, one outage for all keys
// in the metrics (labelled by the keys' prefix, no label per key).
TEST(GlobalThrottleTest, PerCallerFleetLimitWithoutRedisGivesEachKeyItsLocalShare) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  HandlerRuns runs;
  testing::SyncEchoService service(&runs);
  testing::GuardedServer started = StartWithThrottle(
      absl::StrCat(R"({"perCaller":{"key":{"header":"x-tenant-id"},"global":{"redis":"127.0.0.1:)",
                   *port, R"(","key":"test:caller","ratePerSecond":0.2,"burst":2,)",
                   R"("expectedReplicas":2}}})"),
      &service);
  ASSERT_NE(started.server, nullptr);
  EXPECT_TRUE(started.resilience->warnings().empty());
  auto stub = test::TestService::NewStub(started.server->NewChannel());
  std::string message;
  auto call = [&](const char* tenant) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    context.AddMetadata("x-tenant-id", tenant);
    test::Req request;
    test::Resp response;
    const grpc::Status status = stub->Unary(&context, request, &response);
    if (!status.ok()) message = status.error_message();
    return status.ok();
  };
  // A share of 0.1/s and a burst of 1 per key: a token each, within 10 s.
  EXPECT_TRUE(call("tenant-a"));
  EXPECT_FALSE(call("tenant-a"));
  EXPECT_FALSE(call("tenant-a"));
  EXPECT_THAT(message, HasSubstr("/resilience.test.TestService/Unary: per-caller fleet-wide rate "
                                 "limit 0.2/s reached for caller \"tenant-a\""));
  EXPECT_TRUE(call("tenant-b"));  // tenant-a's refusals took nothing from it
  EXPECT_EQ(runs.total(), 2);
  ASSERT_TRUE(EventuallyInMetrics(*started.resilience,
                                  "grpc_resilience_server_global_limit_transitions_total{key="
                                  "\"test:caller:*\",to=\"local_share\"} 1"));
  const std::string body = Metrics(*started.resilience);
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_global_limit_using_store{key="
                              "\"test:caller:*\"} 0"));
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_global_limit_admitted_total{key="
                              "\"test:caller:*\",source=\"local_share\"} 2"));
  EXPECT_THAT(body, HasSubstr("grpc_resilience_server_per_caller_rejections_total{scope=\""));
  EXPECT_THAT(body, HasSubstr("cause=\"global_rate\"} 2"));
  EXPECT_THAT(body, Not(HasSubstr("tenant-a")));
  started.server->Shutdown();
}

// Two scopes on one Redis key (allowed: the same ratePerSecond and burst)
// are one fleet bucket: their metrics are one sample set under that key,
// the sums of both, not two series with the same labels (a scrape with
// duplicate series loses one of them).
TEST(GlobalThrottleTest, ScopesSharingAKeyShowOneSampleSetWithTheirSums) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  for (const std::string& throttle :
       {absl::StrCat(R"({"global":{"redis":"127.0.0.1:)", *port,
                     R"(","key":"test","ratePerSecond":0.2,"burst":2,"expectedReplicas":2}})"),
        absl::StrCat(R"({"perCaller":{"key":{"header":"x-tenant-id"},"global":{"redis":)",
                     R"("127.0.0.1:)", *port, R"(","key":"test","ratePerSecond":0.2,)",
                     R"("burst":2,"expectedReplicas":2}}})")}) {
    const std::string key = absl::StrContains(throttle, "perCaller") ? "test:*" : "test";
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(absl::StrCat(
        R"({"methodConfig":[{"name":[{"service":"resilience.test.TestService","method":"Unary"}],)",
        R"("throttle":)", throttle,
        R"(},{"name":[{"service":"resilience.test.TestService","method":"ServerStream"}],)",
        R"("throttle":)", throttle, "}]}"));
    ASSERT_TRUE(policies.ok()) << policies.status();
    HandlerRuns runs;
    testing::SyncEchoService service(&runs);
    ServerResilienceOptions options;
    options.fleet_limits = RedisFleetLimits();
    testing::GuardedServer started = testing::StartGuardedServer<test::TestService>(
        *std::move(policies), &service, std::move(options));
    ASSERT_NE(started.server, nullptr);
    auto stub = test::TestService::NewStub(started.server->NewChannel());
    {
      grpc::ClientContext context;
      context.AddMetadata("x-tenant-id", "tenant-a");
      test::Req request;
      test::Resp response;
      EXPECT_TRUE(stub->Unary(&context, request, &response).ok());
    }
    {
      grpc::ClientContext context;
      context.AddMetadata("x-tenant-id", "tenant-a");
      test::Req request;
      test::Resp response;
      auto reader = stub->ServerStream(&context, request);
      while (reader->Read(&response)) {
      }
      EXPECT_TRUE(reader->Finish().ok());
    }
    ASSERT_TRUE(EventuallyInMetrics(*started.resilience,
                                    absl::StrCat("grpc_resilience_server_global_limit_admitted_"
                                                 "total{key=\"", key,
                                                 "\",source=\"local_share\"} 2")))
        << Metrics(*started.resilience);
    const std::string body = Metrics(*started.resilience);
    const std::string using_store =
        absl::StrCat("grpc_resilience_server_global_limit_using_store{key=\"", key, "\"}");
    size_t count = 0;
    for (size_t at = body.find(using_store); at != std::string::npos;
         at = body.find(using_store, at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, 1u) << body;
    started.server->Shutdown();
  }
}

}  // namespace
}  // namespace resilience
