// A three-state breaker's half-open probe waits for the channel to connect
// (issue 40, item 8), end to end: real time (gRPC's own reconnect timers),
// a server stopped and started again on the same port, bounded loops.
// While the server is down the open breaker sends no probe, however many open
// periods pass, and its open period does not grow; once the server is back
// the channel reconnects (the breaker hurries gRPC's reconnect backoff) and
// the next call goes through. Before, each open period's end spent a probe on
// the unconnected channel and doubled the period (0.2 s, 0.4 s, ... 12.8 s).

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpc_resilience/client.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using resilience::test::Req;
using resilience::test::Resp;
using resilience::test::TestService;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

class OkService final : public TestService::Service {
 public:
  grpc::Status Unary(grpc::ServerContext*, const Req*, Resp*) override {
    return grpc::Status::OK;
  }
};

// A server of `service` on 127.0.0.1:`port` (0: any); `port` gets the port.
std::unique_ptr<grpc::Server> StartOn(OkService& service, int& port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  return builder.BuildAndStart();
}

TEST(ProbeWaitsForConnectionTest, NoProbeWhileTheServerIsDownAndQuickRecovery) {
  OkService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartOn(service, port);
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  // Three failures in a row trip it; 0.2 s open, doubled by each failed probe.
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "breaker": {"threeState": {"consecutiveFailures": 3, "openDuration": "0.2s",
                                     "maxOpenDuration": "60s"}}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  ResilientChannel channel = CreateResilientChannel(
      absl::StrCat("ipv4:127.0.0.1:", port), grpc::InsecureChannelCredentials(), *policies);
  auto stub = TestService::NewStub(channel.channel);
  auto call = [&] {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    Resp response;
    return stub->Unary(&context, request, &response);
  };
  ASSERT_TRUE(testing::Eventually([&] { return call().ok(); }));

  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  server.reset();
  ASSERT_TRUE(testing::Eventually([&] {
    call();
    return channel.resilience->Stats(kUnary).rejected_by_breaker > 0;
  })) << "the breaker did not open";

  // Ten open periods with the server down: no probe is spent, the breaker
  // never goes half-open (a probe would fail and re-open it).
  const absl::Time down_until = absl::Now() + absl::Seconds(2);
  while (absl::Now() < down_until) {
    call();
    absl::SleepFor(absl::Milliseconds(10));
  }
  const ClientMethodStats down = channel.resilience->Stats(kUnary);
  EXPECT_EQ(down.Transitions(BreakerState::kHalfOpen, BreakerState::kOpen), 0)
      << "probes were spent on a channel that could not connect";
  EXPECT_EQ(channel.resilience->BreakerSnapshotOf(kUnary)->state, BreakerState::kOpen);

  // Back on the same port: the next calls succeed within a few seconds (the
  // reconnect is hurried every second; gRPC's own backoff alone would wait
  // 2.6 s and more, and a doubled open period up to 12.8 s).
  server = StartOn(service, port);
  ASSERT_NE(server, nullptr);
  const absl::Time back = absl::Now();
  EXPECT_TRUE(testing::Eventually([&] { return call().ok(); }, absl::Seconds(20)));
  const absl::Duration took = absl::Now() - back;
  std::printf("first OK %s after the server was back\n", absl::FormatDuration(took).c_str());
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(channel.resilience->BreakerSnapshotOf(kUnary)->state, BreakerState::kClosed);
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace resilience
