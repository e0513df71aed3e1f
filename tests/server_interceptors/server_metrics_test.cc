// The server's metrics: every method called is counted, with or without a
// policy (calls by the status sent, handler latency, in flight), rejections
// by cause, names made up by clients under one "unknown", and
// AppendMetrics() renders the families of docs/metrics.md, which
// Prometheus' promtool accepts. Sync and callback APIs.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/metrics_test_fixture.h"
#include "tests/testing/promtool.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";
constexpr char kClientStream[] = "/resilience.test.TestService/ClientStream";
constexpr char kServerStream[] = "/resilience.test.TestService/ServerStream";
constexpr char kBidi[] = "/resilience.test.TestService/Bidi";
constexpr int kOk = 0;
constexpr int kResourceExhausted = static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED);
constexpr int kUnavailable = static_cast<int>(grpc::StatusCode::UNAVAILABLE);
constexpr int kUnimplemented = static_cast<int>(grpc::StatusCode::UNIMPLEMENTED);
constexpr char kDuration[] = "grpc_resilience_server_handler_duration_seconds";

// The sync echo service, except that a Unary call with text "gated" waits
// until Open() (at most 10 s).
class GatedEchoService final : public resilience::test::TestService::Service {
 public:
  explicit GatedEchoService(HandlerRuns* runs) : echo_(runs) {}
  void Open() {
    if (!open_.HasBeenNotified()) open_.Notify();
  }
  int waiting() const { return waiting_.load(); }

  grpc::Status Unary(grpc::ServerContext* context, const resilience::test::Req* request,
                     resilience::test::Resp* response) override {
    if (request->text() == "gated") {
      ++waiting_;
      open_.WaitForNotificationWithTimeout(absl::Seconds(10));
      --waiting_;
    }
    return echo_.Unary(context, request, response);
  }
  grpc::Status ClientStream(grpc::ServerContext* context,
                            grpc::ServerReader<resilience::test::Req>* reader,
                            resilience::test::Resp* response) override {
    return echo_.ClientStream(context, reader, response);
  }
  grpc::Status ServerStream(grpc::ServerContext* context, const resilience::test::Req* request,
                            grpc::ServerWriter<resilience::test::Resp>* writer) override {
    return echo_.ServerStream(context, request, writer);
  }
  grpc::Status Bidi(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<resilience::test::Resp, resilience::test::Req>* stream)
      override {
    return echo_.Bidi(context, stream);
  }

 private:
  SyncEchoService echo_;
  absl::Notification open_;
  std::atomic<int> waiting_{0};
};

// Parameter: the callback API (else sync).
class ServerMetricsTest : public MetricsTest<::testing::TestWithParam<bool>> {
 protected:
  // A server for `policy_json`, its service behind the guard; the gated
  // sync service when `gated`.
  void Start(const std::string& policy_json, bool metrics = true, bool gated = false) {
    grpc::Service* service;
    if (gated) {
      gated_ = std::make_unique<GatedEchoService>(&runs_);
      service = gated_.get();
    } else if (GetParam()) {
      callback_ = std::make_unique<CallbackEchoService>(&runs_);
      service = callback_.get();
    } else {
      sync_ = std::make_unique<SyncEchoService>(&runs_);
      service = sync_.get();
    }
    ServerResilienceOptions options;
    options.metrics = metrics;
    GuardedServer started = StartGuardedServer<resilience::test::TestService>(
        Policies(policy_json), service, std::move(options));
    state_ = started.resilience;
    server_ = std::move(started.server);
    ASSERT_NE(server_, nullptr);
    channel_ = server_->NewChannel();
    stub_ = resilience::test::TestService::NewStub(channel_);
  }

  void TearDown() override {
    if (gated_ != nullptr) gated_->Open();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  grpc::Status Call(CallType type) { return MakeCall(*stub_, type, Flavour::kSync).status; }

  // A call of a method the server does not implement, by a GenericStub.
  grpc::Status CallUnimplemented(const std::string& method) {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;  // an empty message
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    return status;
  }

  std::string Render() { return RenderMetrics(*state_); }

  HandlerRuns runs_;
  std::unique_ptr<SyncEchoService> sync_;
  std::unique_ptr<CallbackEchoService> callback_;
  std::unique_ptr<GatedEchoService> gated_;
  std::shared_ptr<ServerResilience> state_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, ServerMetricsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

// Methods without a policy are counted, every call type: calls by status,
// handler latency, admitted; nothing stays in flight. AllStats() lists
// them all, sorted.
TEST_P(ServerMetricsTest, MethodsWithoutPolicyAreCounted) {
  Start("{}");
  for (int i = 0; i < 2; ++i) {
    for (CallType type : kAllCallTypes) EXPECT_TRUE(Call(type).ok()) << Name(type);
  }
  for (const char* method : {kUnary, kClientStream, kServerStream, kBidi}) {
    SCOPED_TRACE(method);
    const ServerMethodStats s = state_->Stats(method);
    EXPECT_EQ(s.CallsWithCode(kOk), 2u);
    EXPECT_EQ(s.calls_by_code.total(), 2u);
    EXPECT_EQ(s.latency.count, 2u);
    EXPECT_EQ(s.admitted, 2);
    EXPECT_EQ(s.in_flight, 0);
    EXPECT_EQ(s.rejected_concurrency + s.rejected_rate + s.faults_aborted, 0);
  }
  std::vector<std::string> names;
  for (const auto& [name, stats] : state_->AllStats()) names.push_back(name);
  EXPECT_THAT(names, ElementsAre(kBidi, kClientStream, kServerStream, kUnary));
}

// Names a client makes up (unimplemented methods) are counted together
// under grpc_method="unknown", never one series each.
TEST_P(ServerMetricsTest, MadeUpMethodsAreCountedAsUnknown) {
  Start("{}");
  EXPECT_TRUE(Call(CallType::kUnary).ok());
  EXPECT_EQ(CallUnimplemented("/no.such.Service/Method").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(CallUnimplemented("/resilience.test.TestService/NoSuchMethod").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  const ServerMethodStats unknown = state_->Stats(ServerResilience::kUnknownMethod);
  EXPECT_EQ(unknown.CallsWithCode(kUnimplemented), 2u);
  std::vector<std::string> names;
  for (const auto& [name, stats] : state_->AllStats()) names.push_back(name);
  EXPECT_THAT(names, ElementsAre(kUnary, "unknown"));
  EXPECT_THAT(Render(), HasSubstr("grpc_resilience_server_calls_total{grpc_method=\"unknown\","
                                  "grpc_code=\"UNIMPLEMENTED\"} 2\n"));
}

// Rejections are counted by cause, and as calls with the status sent;
// rejected calls are neither admitted nor timed, admitted ones are in
// flight until their status.
TEST_P(ServerMetricsTest, RejectionsByCause) {
  Start(R"({"methodConfig": [
      {"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
       "throttle": {"maxConcurrency": 1}},
      {"name": [{"service": "resilience.test.TestService", "method": "ClientStream"}],
       "throttle": {"ratePerSecond": 0.001, "burst": 1}},
      {"name": [{"service": "resilience.test.TestService", "method": "ServerStream"}],
       "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}},
      {"name": [{"service": "resilience.test.TestService", "method": "Bidi"}],
       "throttle": {"maxConcurrency": 10},
       "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}}]})",
        /*metrics=*/true, /*gated=*/!GetParam());
  if (!GetParam()) {
    // Concurrency: one call holds the only slot.
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    resilience::test::Req request;
    request.set_text("gated");
    resilience::test::Resp response;
    absl::Notification done;
    stub_->async()->Unary(&context, &request, &response, [&](grpc::Status s) {
      EXPECT_TRUE(s.ok()) << s.error_message();
      done.Notify();
    });
    ASSERT_TRUE(Eventually([&] { return gated_->waiting() == 1; }));
    EXPECT_EQ(state_->Stats(kUnary).in_flight, 1);
    EXPECT_THAT(Render(), HasSubstr(absl::StrCat("grpc_resilience_server_in_flight{grpc_method=\"",
                                                 kUnary, "\"} 1\n")));
    EXPECT_EQ(Call(CallType::kUnary).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    gated_->Open();
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    const ServerMethodStats unary = state_->Stats(kUnary);
    EXPECT_EQ(unary.rejected_concurrency, 1);
    EXPECT_EQ(unary.CallsWithCode(kOk), 1u);
    EXPECT_EQ(unary.CallsWithCode(kResourceExhausted), 1u);
    EXPECT_EQ(unary.latency.count, 1u);  // the admitted call only
    EXPECT_EQ(unary.in_flight, 0);
  }
  // Rate: one token, then rejections.
  EXPECT_TRUE(Call(CallType::kClientStream).ok());
  EXPECT_EQ(Call(CallType::kClientStream).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  const ServerMethodStats client_stream = state_->Stats(kClientStream);
  EXPECT_EQ(client_stream.rejected_rate, 1);
  EXPECT_EQ(client_stream.admitted, 1);
  EXPECT_EQ(client_stream.CallsWithCode(kResourceExhausted), 1u);
  EXPECT_EQ(client_stream.latency.count, 1u);
  // Injected abort, without a throttle (fault injection counts the call)...
  EXPECT_EQ(Call(CallType::kServerStream).error_code(), grpc::StatusCode::UNAVAILABLE);
  const ServerMethodStats server_stream = state_->Stats(kServerStream);
  EXPECT_EQ(server_stream.faults_aborted, 1);
  EXPECT_EQ(server_stream.admitted, 0);
  EXPECT_EQ(server_stream.in_flight, 0);
  EXPECT_EQ(server_stream.CallsWithCode(kUnavailable), 1u);
  EXPECT_EQ(server_stream.latency.count, 0u);
  // ... and behind a throttle that admitted it (the throttle counts it).
  EXPECT_EQ(Call(CallType::kBidi).error_code(), grpc::StatusCode::UNAVAILABLE);
  const ServerMethodStats bidi = state_->Stats(kBidi);
  EXPECT_EQ(bidi.faults_aborted, 1);
  EXPECT_EQ(bidi.in_flight, 0);
  EXPECT_EQ(bidi.CallsWithCode(kUnavailable), 1u);
  EXPECT_EQ(bidi.latency.count, 0u);  // answered without its handler
  EXPECT_EQ(runs_.of(CallType::kServerStream) + runs_.of(CallType::kBidi), 0);

  const std::string text = Render();
  for (const std::string& line : {
           absl::StrCat("grpc_resilience_server_rejections_total{grpc_method=\"", kClientStream,
                        "\",cause=\"rate\"} 1"),
           absl::StrCat("grpc_resilience_server_rejections_total{grpc_method=\"", kServerStream,
                        "\",cause=\"injected_abort\"} 1"),
           absl::StrCat("grpc_resilience_server_rejections_total{grpc_method=\"", kBidi,
                        "\",cause=\"concurrency\"} 0"),
           absl::StrCat("grpc_resilience_server_rejections_total{grpc_method=\"", kBidi,
                        "\",cause=\"injected_abort\"} 1"),
           absl::StrCat("grpc_resilience_server_calls_total{grpc_method=\"", kServerStream,
                        "\",grpc_code=\"UNAVAILABLE\"} 1"),
       }) {
    EXPECT_THAT(text, HasSubstr(line + "\n"));
  }
  if (!GetParam()) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("grpc_resilience_server_rejections_total{grpc_method=\"",
                                             kUnary, "\",cause=\"concurrency\"} 1\n")));
  }
}

// With metrics off, methods without a policy pass through untouched and
// nothing is counted by status or latency.
TEST_P(ServerMetricsTest, MetricsOff) {
  Start(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                        "method": "Unary"}],
                              "throttle": {"maxConcurrency": 10}}]})",
        /*metrics=*/false);
  EXPECT_TRUE(Call(CallType::kUnary).ok());
  EXPECT_TRUE(Call(CallType::kBidi).ok());
  EXPECT_EQ(CallUnimplemented("/no.such.Service/Method").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(state_->Stats(kBidi).admitted, 0);
  EXPECT_EQ(state_->Stats(kUnary).admitted, 1);
  EXPECT_EQ(state_->Stats(kUnary).calls_by_code.total(), 0u);
  EXPECT_EQ(state_->Stats(kUnary).latency.count, 0u);
  EXPECT_EQ(state_->Stats(ServerResilience::kUnknownMethod).calls_by_code.total(), 0u);
  const auto all = state_->AllStats();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, kUnary);
}

// The text of a small case, exactly (but for the buckets and sum of the
// latency histograms): a rate-limited method, one call admitted and one
// rejected, and a method without a policy.
TEST_P(ServerMetricsTest, AppendMetricsText) {
  Start(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
                                        "method": "Unary"}],
                              "throttle": {"ratePerSecond": 0.001, "burst": 1}}]})");
  EXPECT_TRUE(Call(CallType::kUnary).ok());
  EXPECT_EQ(Call(CallType::kUnary).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Call(CallType::kServerStream).ok());
  const std::string text = Render();
  EXPECT_EQ(WithoutTimings(text, kDuration), R"(# HELP grpc_resilience_server_calls_total Calls the server answered, by the status sent, rejected ones included.
# TYPE grpc_resilience_server_calls_total counter
grpc_resilience_server_calls_total{grpc_method="/resilience.test.TestService/ServerStream",grpc_code="OK"} 1
grpc_resilience_server_calls_total{grpc_method="/resilience.test.TestService/Unary",grpc_code="OK"} 1
grpc_resilience_server_calls_total{grpc_method="/resilience.test.TestService/Unary",grpc_code="RESOURCE_EXHAUSTED"} 1
# HELP grpc_resilience_server_rejections_total Calls answered without running the handler, by cause: the concurrency limit, the rate limit, fault injection's abort.
# TYPE grpc_resilience_server_rejections_total counter
grpc_resilience_server_rejections_total{grpc_method="/resilience.test.TestService/Unary",cause="rate"} 1
# HELP grpc_resilience_server_in_flight Admitted calls whose status has not been sent yet.
# TYPE grpc_resilience_server_in_flight gauge
grpc_resilience_server_in_flight{grpc_method="/resilience.test.TestService/ServerStream"} 0
grpc_resilience_server_in_flight{grpc_method="/resilience.test.TestService/Unary"} 0
# HELP grpc_resilience_server_handler_duration_seconds From admission to status of admitted calls, injected delays included.
# TYPE grpc_resilience_server_handler_duration_seconds histogram
grpc_resilience_server_handler_duration_seconds_count{grpc_method="/resilience.test.TestService/ServerStream"} 1
grpc_resilience_server_handler_duration_seconds_count{grpc_method="/resilience.test.TestService/Unary"} 1
# HELP grpc_resilience_server_policy_generation The generation of the server's policies in force: 1 as started, one more per update.
# TYPE grpc_resilience_server_policy_generation gauge
grpc_resilience_server_policy_generation 1
# HELP grpc_resilience_server_policy_reload_failures_total Policy files that failed to load on a reload (nothing changed).
# TYPE grpc_resilience_server_policy_reload_failures_total counter
grpc_resilience_server_policy_reload_failures_total 0
)");
  for (const char* method : {kServerStream, kUnary}) {
    const std::string prefix = absl::StrCat(kDuration, "_bucket{grpc_method=\"", method, "\",le=");
    EXPECT_EQ(LinesStartingWith(text, prefix), 15) << method;
    EXPECT_THAT(text, HasSubstr(absl::StrCat(prefix, "\"+Inf\"} 1\n")));
  }
}

// promtool accepts a real exposition of every server family.
TEST_P(ServerMetricsTest, PromtoolAcceptsTheText) {
  RESILIENCE_SKIP_WITHOUT_PROMTOOL();
  Start(R"({"methodConfig": [
      {"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
       "throttle": {"maxConcurrency": 10, "ratePerSecond": 0.001, "burst": 1}},
      {"name": [{"service": "resilience.test.TestService", "method": "ServerStream"}],
       "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 0.5,
                          "delay": "0.001s", "delayFraction": 1}}]})");
  EXPECT_TRUE(Call(CallType::kUnary).ok());
  EXPECT_FALSE(Call(CallType::kUnary).ok());
  for (int i = 0; i < 4; ++i) Call(CallType::kServerStream);
  EXPECT_TRUE(Call(CallType::kBidi).ok());
  EXPECT_EQ(CallUnimplemented("/no.such.Service/Method").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  const std::string text = Render();
  EXPECT_THAT(text, HasSubstr("grpc_resilience_server_injected_delays_total"));
  ExpectPromtoolAccepts(text);
}

}  // namespace
}  // namespace resilience::testing
