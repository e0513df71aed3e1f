// A policy with throttle.global on a server that was given no store for
// fleet-wide limits (ServerResilienceOptions::fleet_limits unset, as in a
// program that links grpc_resilience::server without
// grpc_resilience::redis_limits; this binary links no Redis client): not
// ignored. AddServerInterceptors() warns, naming the entry's path, the
// library to link and what to call; that scope rejects every call with the
// same words and never runs its handler; scopes without throttle.global
// are served as usual.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "grpc_resilience/policy.h"
#include "grpcpp/client_context.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/guarded_server.h"

namespace resilience {
namespace {

using ::resilience::testing::HandlerRuns;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Unary is in methodConfig[1]'s scope (a global limit, and a local rate that
// alone would admit it); the rest of the service in methodConfig[0]'s.
constexpr char kPolicies[] = R"({"methodConfig": [
  {"name": [{"service": "resilience.test.TestService"}], "throttle": {"maxConcurrency": 4}},
  {"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
   "throttle": {"ratePerSecond": 1000, "burst": 1000,
                "global": {"redis": "127.0.0.1:6379", "key": "t", "ratePerSecond": 100,
                           "burst": 100, "expectedReplicas": 2}}}]})";

TEST(FleetLimitsMissingTest, WarnsAtStartAndTheScopeRejectsEveryCallSayingWhy) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(kPolicies);
  ASSERT_TRUE(policies.ok()) << policies.status();
  ASSERT_TRUE(policies->warnings().empty());  // the file is fine; the server lacks the store
  HandlerRuns runs;
  testing::SyncEchoService service(&runs);
  testing::GuardedServer started =
      testing::StartGuardedServer<test::TestService>(*std::move(policies), &service);
  ASSERT_NE(started.server, nullptr);

  const auto names_the_fix = AllOf(
      HasSubstr("methodConfig[1].throttle.global: this server has no store for fleet-wide rate "
                "limits"),
      HasSubstr("link grpc_resilience::redis_limits"),
      HasSubstr("ServerResilienceOptions::fleet_limits = resilience::RedisFleetLimits()"));
  ASSERT_EQ(started.resilience->warnings().size(), 1u);
  EXPECT_THAT(started.resilience->warnings()[0], names_the_fix);

  auto stub = test::TestService::NewStub(started.server->NewChannel());
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    test::Req request;
    test::Resp response;
    const grpc::Status status = stub->Unary(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(),
                AllOf(HasSubstr("/resilience.test.TestService/Unary: throttle not usable: "),
                      names_the_fix));
  }
  EXPECT_EQ(runs.total(), 0);
  EXPECT_EQ(started.resilience->Stats("/resilience.test.TestService/Unary").rejected_rate, 3);

  // The service's other scope has no global limit: served.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  test::Req request;
  test::Resp response;
  auto writer = stub->ClientStream(&context, &response);
  ASSERT_TRUE(writer->Write(request));
  ASSERT_TRUE(writer->WritesDone());
  EXPECT_TRUE(writer->Finish().ok());
  EXPECT_EQ(runs.total(), 1);
  started.server->Shutdown();
}

// Without throttle.global, no store is needed and none is asked for.
TEST(FleetLimitsMissingTest, NoWarningWithoutThrottleGlobal) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "throttle": {"ratePerSecond": 10}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  grpc::ServerBuilder builder;
  EXPECT_TRUE(AddServerInterceptors(builder, *std::move(policies))->warnings().empty());
}

}  // namespace
}  // namespace resilience
