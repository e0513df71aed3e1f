// The guard over real channels to an in-process server, for every call type
// on the sync and the callback server API: a call the interceptors reject
// never runs the user's code and gets its status with no response message;
// a client that waits for each call is never rejected at maxConcurrency 1.
// These tests also pin the gRPC 1.51 behaviour the guard relies on
// (docs/server-rejection.md): they fail loudly if an upgrade changes it.

#include "src/server_interceptors/guarded_service.h"

#include <memory>
#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/eventually.h"
#include "tests/testing/test_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::test::Req;
using ::resilience::test::Resp;
using ::resilience::test::TestService;
using ::resilience::testing::CallResult;
using ::resilience::testing::CallType;
using ::resilience::testing::HandlerRuns;
using ::resilience::testing::kAllCallTypes;
using ::resilience::testing::Name;
using ::resilience::testing::GuardedServer;
using ::resilience::testing::StartGuardedServer;
using ::resilience::testing::TestServer;
using ::testing::HasSubstr;

constexpr char kService[] = "resilience.test.TestService";

// One call of `type` with the sync stub; streaming calls send `uploads`
// messages. Requests are long enough for their text to live on the heap, so
// that a request the guard forgot to destroy shows up as a leak under ASan.
CallResult Call(TestService::Stub& stub, CallType type, int uploads = 3) {
  return testing::internal_calls::Sync(stub, type, std::string(100, 'x'), uploads);
}

// grpc-retry-pushback-ms of a call, -1 when absent.
int64_t PushbackMs(const CallResult& result) {
  auto it = result.trailers.find("grpc-retry-pushback-ms");
  int64_t ms = -1;
  if (it != result.trailers.end()) (void)absl::SimpleAtoi(it->second, &ms);
  return ms;
}

class GuardedServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  bool callback_api() const { return GetParam(); }

  void Start(const std::string& policy_json, Clock& clock = Clock::Real()) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    service_ = std::make_unique<testing::EchoService>(callback_api(), &runs_);
    ServerResilienceOptions options;
    GuardedServer started = StartGuardedServer<TestService>(*std::move(policies), service_->get(),
                                                            std::move(options), clock);
    state_ = started.resilience;
    server_ = std::move(started.server);
    ASSERT_NE(server_, nullptr);
    stub_ = TestService::NewStub(server_->NewChannel());
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
    // Every rejection was handed over and cleaned up.
    if (state_ != nullptr) {
      EXPECT_EQ(state_->impl()->call_verdicts().size(), 0);
    }
  }

  HandlerRuns runs_;
  std::unique_ptr<testing::EchoService> service_;
  std::shared_ptr<ServerResilience> state_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<TestService::Stub> stub_;
};

// A rate limit of one call (the clock never moves): the first call of each
// method runs, every later one is rejected without running any user code,
// without a response message and with the limit's pushback.
TEST_P(GuardedServiceTest, ThrottledCallsNeverRunTheHandler) {
  SimulatedClock clock;
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "throttle": {"ratePerSecond": 2, "burst": 1}}]})"),
        clock);
  CallResult first = Call(*stub_, CallType::kUnary);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  for (CallType type : kAllCallTypes) {
    for (int i = 0; i < 5; ++i) {
      CallResult seen = Call(*stub_, type);
      EXPECT_EQ(seen.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << Name(type);
      EXPECT_THAT(seen.status.error_message(), HasSubstr("rate limit 2/s reached"));
      EXPECT_EQ(seen.messages_received, 0) << Name(type);
      EXPECT_EQ(PushbackMs(seen), 500) << Name(type);  // the next token
    }
  }
  EXPECT_EQ(runs_.of(CallType::kUnary), 1);
  EXPECT_EQ(runs_.total(), 1);
  EXPECT_EQ(runs_.messages_read.load(), 0);
}

// Every rejection is counted where it is decided: on the callback API that
// is when gRPC makes the call's interceptors, and the rejected call then has
// none of ours (docs/server-rejection.md, "Deciding on arrival"), so nothing
// counts it at PRE_SEND_STATUS; on the sync API, at PRE_SEND_STATUS as
// before. Either way: by status, by cause, by criticality, never in flight.
TEST_P(GuardedServiceTest, RejectionsAreCountedWhereTheyAreDecided) {
  SimulatedClock clock;  // never moves: one token for the whole service
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "throttle": {"ratePerSecond": 2, "burst": 1}}]})"),
        clock);
  ASSERT_TRUE(Call(*stub_, CallType::kUnary).status.ok());
  for (CallType type : kAllCallTypes) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(Call(*stub_, type).status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << Name(type);
    }
  }
  for (const char* method : {"Unary", "ClientStream", "ServerStream", "Bidi"}) {
    SCOPED_TRACE(method);
    const ServerMethodStats s = state_->Stats(absl::StrCat("/", kService, "/", method));
    const bool unary = absl::string_view(method) == "Unary";
    EXPECT_EQ(s.rejected_rate, 3);
    EXPECT_EQ(s.CallsWithCode(static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED)), 3u);
    EXPECT_EQ(s.CallsWithCode(0), unary ? 1u : 0u);
    EXPECT_EQ(s.calls_by_code.total(), unary ? 4u : 3u);
    EXPECT_EQ(s.admitted, unary ? 1 : 0);
    EXPECT_EQ(s.in_flight, 0);
    int64_t by_criticality = 0;
    for (int64_t n : s.rejected_by_criticality) by_criticality += n;
    EXPECT_EQ(by_criticality, 3);
  }
  EXPECT_EQ(runs_.total(), 1);
}

// What deciding on arrival relies on in gRPC 1.51 (server_cc.cc): when a
// server's interceptor factories run, the call's context already holds the
// client metadata on both APIs; the core call is bound to it on the
// callback API only (the sync API binds it after the factories, so its
// peer is not known then: the sync API decides at
// POST_RECV_INITIAL_METADATA instead).
TEST_P(GuardedServiceTest, ClientMetadataIsBoundWhenTheFactoriesRun) {
  struct Seen {
    std::atomic<int> calls{0};
    std::atomic<bool> header{false};
    std::atomic<bool> core_call{false};
  } seen;
  class Probe final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    explicit Probe(Seen* seen) : seen_(seen) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo* info) override {
      const auto& metadata = info->server_context()->client_metadata();
      const auto found = metadata.find("x-probe");
      seen_->header = found != metadata.end() && found->second == "seen";
      seen_->core_call = info->server_context()->c_call() != nullptr;
      seen_->calls.fetch_add(1);
      return nullptr;
    }

   private:
    Seen* const seen_;
  };
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString("{}");
  ASSERT_TRUE(policies.ok());
  testing::SyncEchoService sync(&runs_);
  testing::CallbackEchoService callback(&runs_);
  ServerResilienceOptions options;
  options.outer_interceptors.push_back(std::make_unique<Probe>(&seen));
  GuardedServer started = StartGuardedServer<TestService>(
      *std::move(policies), callback_api() ? static_cast<grpc::Service*>(&callback) : &sync,
      std::move(options));
  ASSERT_NE(started.server, nullptr);
  auto stub = TestService::NewStub(started.server->NewChannel());
  grpc::ClientContext context;
  context.AddMetadata("x-probe", "seen");
  Req request;
  Resp response;
  ASSERT_TRUE(stub->Unary(&context, request, &response).ok());
  started.server->Shutdown(absl::Seconds(5));
  EXPECT_EQ(seen.calls.load(), 1);
  EXPECT_TRUE(seen.header.load());
  EXPECT_EQ(seen.core_call.load(), callback_api());
}

// Injected aborts on every method: no user code runs for any call type.
TEST_P(GuardedServiceTest, InjectedAbortsNeverRunTheHandler) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "faultInjection": {"abortCode": "UNAVAILABLE"}}]})"));
  for (CallType type : kAllCallTypes) {
    for (int i = 0; i < 5; ++i) {
      CallResult seen = Call(*stub_, type);
      EXPECT_EQ(seen.status.error_code(), grpc::StatusCode::UNAVAILABLE) << Name(type);
      EXPECT_THAT(seen.status.error_message(), HasSubstr("fault injected"));
      EXPECT_EQ(seen.messages_received, 0) << Name(type);
    }
  }
  EXPECT_EQ(runs_.total(), 0);
  EXPECT_EQ(runs_.messages_read.load(), 0);
}

// Admitted calls of every type work as without the guard.
TEST_P(GuardedServiceTest, AdmittedCallsAreServedAsUsual) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "throttle": {"maxConcurrency": 100}}]})"));
  EXPECT_TRUE(Call(*stub_, CallType::kUnary).status.ok());
  EXPECT_TRUE(Call(*stub_, CallType::kClientStream, 7).status.ok());
  EXPECT_EQ(Call(*stub_, CallType::kServerStream).messages_received, 3);
  EXPECT_EQ(Call(*stub_, CallType::kBidi, 5).messages_received, 5);
  EXPECT_EQ(runs_.total(), 4);
  EXPECT_EQ(runs_.messages_read.load(), 12);
}

// The slot of a call is free before its client sees the status: 1,000
// sequential calls of each type at maxConcurrency 1 are all admitted.
TEST_P(GuardedServiceTest, SequentialCallsAreNeverRejectedAtConcurrencyOne) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "throttle": {"maxConcurrency": 1}}]})"));
  for (CallType type : kAllCallTypes) {
    int rejected = 0;
    for (int i = 0; i < 1000; ++i) {
      CallResult seen = Call(*stub_, type, 1);
      if (!seen.status.ok()) ++rejected;
    }
    EXPECT_EQ(rejected, 0) << Name(type);
    EXPECT_EQ(runs_.of(type), 1000) << Name(type);
  }
}

// A call held in an injected delay: its client going away (deadline or
// cancellation) frees its throttle slot within milliseconds, not at the end
// of the delay, and its handler never runs. (The callback API sees the
// deadline only: nothing reports a cancellation before the handler starts.)
TEST_P(GuardedServiceTest, ACallerThatGoesAwayFreesItsSlotAtOnce) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "throttle": {"maxConcurrency": 1},
                          "faultInjection": {"delay": "20s"}}]})"));
  const std::string kUnary = "/resilience.test.TestService/Unary";
  std::vector<bool> cancels = {false};
  if (!callback_api()) cancels.push_back(true);
  for (bool cancel : cancels) {
    grpc::ClientContext context;
    // The deadline must pass in the delay, not before the call reached it
    // (on a busy machine, 100 ms might not cover connecting and
    // sending): 1 s, of a 20 s delay.
    context.set_deadline(absl::ToChronoTime(absl::Now() + (cancel ? absl::Seconds(30)
                                                                  : absl::Seconds(1))));
    Req request;
    Resp response;
    absl::Notification done;
    grpc::Status status;
    stub_->async()->Unary(&context, &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    if (cancel) {
      const absl::Time until = absl::Now() + absl::Seconds(5);
      while (state_->Stats(kUnary).in_flight == 0 && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      absl::SleepFor(absl::Milliseconds(50));
      context.TryCancel();
    }
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
    const absl::Time ended = absl::Now();
    const absl::Time until = ended + absl::Seconds(5);
    while (state_->Stats(kUnary).in_flight != 0 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_LT(absl::Now() - ended, absl::Milliseconds(500)) << (cancel ? "cancel" : "deadline");
  }
  EXPECT_EQ(runs_.total(), 0);
  EXPECT_EQ(state_->Stats(kUnary).expired_while_delayed, static_cast<int64_t>(cancels.size()));
}

// A shutdown's grace period holds with calls sitting in a 20 s injected
// delay: the server is down within the grace period plus a little, and no
// handler ran. (EndHoldsAt() is what a server calls before Shutdown(); the
// sync API would also see the shutdown's cancellation without it.)
TEST_P(GuardedServiceTest, ShutdownHonoursTheGracePeriodDuringADelay) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "faultInjection": {"delay": "20s"}}]})"));
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<Resp>> responses;
  std::atomic<int> finished{0};
  Req request;
  for (int i = 0; i < 5; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    responses.push_back(std::make_unique<Resp>());
    stub_->async()->Unary(contexts.back().get(), &request, responses.back().get(),
                          [&](grpc::Status) { finished++; });
  }
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (state_->Stats("/resilience.test.TestService/Unary").faults_delayed < 5 &&
         absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const absl::Time start = absl::Now();
  state_->EndHoldsAt(start + absl::Milliseconds(300));
  server_->Shutdown(absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(2));
  server_.reset();
  const absl::Time wait_end = absl::Now() + absl::Seconds(5);
  while (finished.load() < 5 && absl::Now() < wait_end) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(finished.load(), 5);
  EXPECT_EQ(runs_.total(), 0);
}

// Calls held in a delay pin no thread of the library: with a 1 ms delay on
// every method, 300 server streams whose clients never read (their handlers
// block on flow control) do not keep other calls from being served.
TEST_P(GuardedServiceTest, StalledStreamsDoNotStarveOtherCalls) {
  Start(absl::StrCat(R"({"methodConfig": [{"name": [{"service": ")", kService,
                     R"("}], "faultInjection": {"delay": "0.001s"}}]})"));
  constexpr int kStalled = 300;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<Resp>>> readers;
  Req big;
  big.set_text(std::string(128 << 10, 'b'));  // 3 x 128 KiB back: more than a window
  for (int i = 0; i < kStalled; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub_->ServerStream(contexts.back().get(), big));
  }
  Eventually([&] { return runs_.of(CallType::kServerStream) >= kStalled; }, absl::Seconds(20));
  EXPECT_EQ(runs_.of(CallType::kServerStream), kStalled);
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    request.set_text("small");
    Resp response;
    grpc::Status s = stub_->Unary(&context, request, &response);
    EXPECT_TRUE(s.ok()) << i << ": " << s.error_code() << " " << s.error_message();
  }
  for (auto& context : contexts) context->TryCancel();
  for (auto& reader : readers) (void)reader->Finish();
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, GuardedServiceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

// What the guard refuses, with a message naming the service and the reason.
TEST(GuardedServiceCreateTest, RefusesWhatItCannotGuard) {
  CallVerdicts rejected;
  HandlerRuns runs;
  testing::SyncEchoService sync(&runs);
  absl::StatusOr<std::unique_ptr<GuardedService>> unknown =
      GuardedService::Create(&sync, "no.such.Service", &rejected);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("\"no.such.Service\""));

  TestService::AsyncService async;
  absl::StatusOr<std::unique_ptr<GuardedService>> async_guard =
      GuardedService::Create(&async, kService, &rejected);
  EXPECT_EQ(async_guard.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(async_guard.status().message(), HasSubstr("async"));

  TestService::WithCallbackMethod_Unary<TestService::Service> mixed;
  absl::StatusOr<std::unique_ptr<GuardedService>> mixed_guard =
      GuardedService::Create(&mixed, kService, &rejected);
  EXPECT_EQ(mixed_guard.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mixed_guard.status().message(), HasSubstr("mixes sync and callback"));

  struct Streamed final : TestService::WithStreamedUnaryMethod_Unary<TestService::Service> {
    grpc::Status StreamedUnary(grpc::ServerContext*,
                               grpc::ServerUnaryStreamer<Req, Resp>*) override {
      return grpc::Status::OK;
    }
  } streamed;
  absl::StatusOr<std::unique_ptr<GuardedService>> streamed_guard =
      GuardedService::Create(&streamed, kService, &rejected);
  EXPECT_EQ(streamed_guard.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(streamed_guard.status().message(), HasSubstr("streamed-unary"));

  absl::StatusOr<std::unique_ptr<GuardedService>> ok =
      GuardedService::Create(&sync, kService, &rejected);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT((*ok)->methods(),
              ::testing::ElementsAre("/resilience.test.TestService/Unary",
                                     "/resilience.test.TestService/ClientStream",
                                     "/resilience.test.TestService/ServerStream",
                                     "/resilience.test.TestService/Bidi"));
}

}  // namespace
}  // namespace resilience
