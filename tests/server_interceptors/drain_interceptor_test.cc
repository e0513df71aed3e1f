// ServerResilience::Drain() and its DrainStage, in process: calls that
// arrive while draining are refused UNAVAILABLE with pushback and never run
// their handler; a stream open before goes on, and Drain() returns at its
// deadline (the stream's client may still be reading), or, with no stream,
// once the calls are done. On the sync and the callback APIs.

#include "src/server_interceptors/drain_stage.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"

namespace resilience {
namespace {

using ::resilience::test::Req;
using ::resilience::test::Resp;
using ::resilience::test::TestService;
using ::resilience::testing::CallType;
using ::resilience::testing::Eventually;
using ::resilience::testing::GuardedServer;
using ::resilience::testing::HandlerRuns;
using ::testing::HasSubstr;

template <typename Service>
void DrainRefusesNewCallsAndWaitsForTheOpenOnes() {
  HandlerRuns runs;
  Service service(&runs);
  GuardedServer started =
      testing::StartGuardedServer<TestService>(PolicySet(), &service);
  ASSERT_NE(started.server, nullptr);
  ServerResilience& resilience = *started.resilience;
  auto stub = TestService::NewStub(started.server->NewChannel());

  // A Bidi stream open before the drain.
  grpc::ClientContext stream_context;
  stream_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  auto stream = stub->Bidi(&stream_context);
  Req request;
  Resp response;
  request.set_text("before");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(resilience.open_calls(), 1);

  bool drained = false;
  // The refused call, the stream's round trip and its end must all fit
  // before the deadline (checked below, a precondition of "Drain() still
  // waits for it"): 3 s, not 1, for a busy machine under a sanitizer.
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  std::thread drain([&] { drained = resilience.Drain(deadline); });
  ASSERT_TRUE(Eventually([&] { return resilience.draining(); }));

  grpc::ClientContext refused_context;
  request.set_text("after");
  const grpc::Status refused = stub->Unary(&refused_context, request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("/resilience.test.TestService/Unary"));
  EXPECT_THAT(refused.error_message(), HasSubstr("server shutting down"));
  const auto& trailers = refused_context.GetServerTrailingMetadata();
  auto pushback = trailers.find("grpc-retry-pushback-ms");
  ASSERT_NE(pushback, trailers.end());
  EXPECT_EQ(std::string(pushback->second.data(), pushback->second.size()), "1000");
  EXPECT_EQ(runs.of(CallType::kUnary), 0);  // the handler never ran

  // The stream goes on. Once it is done, Drain() still waits for its
  // deadline: the client of a stream may still be reading.
  request.set_text("during");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.text(), "during");
  EXPECT_EQ(resilience.open_calls(), 1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_TRUE(Eventually([&] { return resilience.open_calls() == 0; }));
  EXPECT_LT(absl::Now(), deadline);
  drain.join();
  EXPECT_TRUE(drained);
  EXPECT_GE(absl::Now(), deadline);
}

TEST(DrainStageTest, SyncApi) {
  DrainRefusesNewCallsAndWaitsForTheOpenOnes<testing::SyncEchoService>();
}

TEST(DrainStageTest, CallbackApi) {
  DrainRefusesNewCallsAndWaitsForTheOpenOnes<testing::CallbackEchoService>();
}

// Drain() gives up at its deadline when a call does not finish, and refuses
// calls for kMinDrain even when none is open (never past the deadline).
TEST(DrainStageTest, DeadlineAndMinimumDrain) {
  HandlerRuns runs;
  testing::CallbackEchoService service(&runs);
  GuardedServer started = testing::StartGuardedServer<TestService>(PolicySet(), &service);
  ASSERT_NE(started.server, nullptr);
  auto stub = TestService::NewStub(started.server->NewChannel());
  grpc::ClientContext stream_context;
  auto stream = stub->Bidi(&stream_context);
  Req request;
  Resp response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  absl::Time start = absl::Now();
  EXPECT_FALSE(started.resilience->Drain(start + absl::Milliseconds(200)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
  stream_context.TryCancel();
  (void)stream->Finish();
  ASSERT_TRUE(Eventually([&] { return started.resilience->open_calls() == 0; }));

  GuardedServer idle = testing::StartGuardedServer<TestService>(PolicySet(), &service);
  ASSERT_NE(idle.server, nullptr);
  start = absl::Now();
  EXPECT_TRUE(idle.resilience->Drain(start + absl::Seconds(10)));
  EXPECT_GE(absl::Now() - start, kMinDrain);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  start = absl::Now();
  EXPECT_TRUE(idle.resilience->Drain(start));  // grace 0: at once
  EXPECT_LT(absl::Now() - start, kMinDrain);
}

}  // namespace
}  // namespace resilience
