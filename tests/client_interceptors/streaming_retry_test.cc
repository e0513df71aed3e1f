// Channels from CreateResilientChannel() against an in-process server: gRPC's
// built-in retry retries streams from the service config BuiltInRetryConfig
// writes, the RetryInterceptor alone retries unary calls, and waitForReady
// from the policy reaches every call. Also checks that gRPC 1.51 takes the
// config's every form (the default name {}, entries with a name only,
// retryThrottling).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/chain_channel.h"
#include "src/core/mutex.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/policy/builtin_retry_config.h"
#include "src/policy/policy_set_access.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using resilience::test::Req;
using resilience::test::Resp;

// What the next handler runs do.
enum class Script {
  kOk,
  // Fail UNAVAILABLE before any response: nothing sent, so gRPC may retry.
  kFailFirst,
  // Fail UNAVAILABLE after a response: server-streaming and bidi write a
  // message first, client-streaming (one response, sent only with OK) sends
  // its headers. Either commits the call in gRPC: no retry.
  kFailAfterResponse,
};

class StreamService final : public resilience::test::TestService::Service {
 public:
  // The next `n` handler runs (of any method) follow `script`; later ones
  // succeed.
  void Next(int n, Script script) {
    MutexLock lock(&mu_);
    next_ = n;
    script_ = script;
  }
  int Runs(const std::string& method) {
    MutexLock lock(&mu_);
    return runs_[method];
  }

  grpc::Status Unary(grpc::ServerContext*, const Req* request, Resp* response) override {
    if (Take("Unary") != Script::kOk) return Unavailable();
    response->set_text("echo:" + request->text());
    return grpc::Status::OK;
  }
  grpc::Status ClientStream(grpc::ServerContext*, grpc::ServerReader<Req>* reader,
                            Resp* response) override {
    const Script script = Take("ClientStream");
    Req request;
    int n = 0;
    while (reader->Read(&request)) ++n;
    if (script == Script::kFailAfterResponse) reader->SendInitialMetadata();
    if (script != Script::kOk) return Unavailable();
    response->set_text(absl::StrCat("read ", n));
    return grpc::Status::OK;
  }
  grpc::Status ServerStream(grpc::ServerContext*, const Req* request,
                            grpc::ServerWriter<Resp>* writer) override {
    const Script script = Take("ServerStream");
    if (script == Script::kFailFirst) return Unavailable();
    Resp response;
    for (int i = 0; i < 3; ++i) {
      response.set_text(request->text() + std::to_string(i));
      writer->Write(response);
      if (script == Script::kFailAfterResponse) return Unavailable();
    }
    return grpc::Status::OK;
  }
  grpc::Status Bidi(grpc::ServerContext*,
                    grpc::ServerReaderWriter<Resp, Req>* stream) override {
    const Script script = Take("Bidi");
    if (script == Script::kFailFirst) return Unavailable();
    Req request;
    Resp response;
    while (stream->Read(&request)) {
      response.set_text("echo:" + request.text());
      stream->Write(response);
      if (script == Script::kFailAfterResponse) return Unavailable();
    }
    return grpc::Status::OK;
  }

 private:
  static grpc::Status Unavailable() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted failure");
  }
  Script Take(const std::string& method) {
    MutexLock lock(&mu_);
    ++runs_[method];
    if (next_ == 0) return Script::kOk;
    --next_;
    return script_;
  }

  Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  Script script_ ABSL_GUARDED_BY(mu_) = Script::kOk;
  std::map<std::string, int> runs_ ABSL_GUARDED_BY(mu_);
};

const char* MethodName(CallType type) {
  switch (type) {
    case CallType::kUnary: return "Unary";
    case CallType::kClientStream: return "ClientStream";
    case CallType::kServerStream: return "ServerStream";
    case CallType::kBidi: return "Bidi";
  }
  return "?";
}

constexpr CallType kStreamTypes[] = {CallType::kClientStream, CallType::kServerStream,
                                     CallType::kBidi};
constexpr Flavour kFlavours[] = {Flavour::kSync, Flavour::kAsync, Flavour::kCallback};

// Every method of the test service retries UNAVAILABLE up to 3 attempts,
// 10 ms apart. The throttling is loose enough never to stop a retry here.
constexpr char kRetryAll[] = R"({"methodConfig": [{
    "name": [{"service": "resilience.test.TestService"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                    "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}],
    "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1}})";

PolicySet MustParse(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

class StreamingRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TestServer::Options options;
    options.services.push_back(&service_);
    server_ = TestServer::Start(std::move(options));
    ASSERT_NE(server_, nullptr);
  }

  void Connect(const std::string& policy_json) {
    policies_ = MustParse(policy_json);
    ResilientChannel made =
        CreateResilientChannel(server_->address(), grpc::InsecureChannelCredentials(), policies_);
    EXPECT_THAT(made.warnings, IsEmpty());
    channel_ = made.channel;
    resilience_ = made.resilience;
    stub_ = resilience::test::TestService::NewStub(channel_);
  }

  StreamService service_;
  std::unique_ptr<TestServer> server_;
  PolicySet policies_;
  std::shared_ptr<ClientResilience> resilience_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

TEST_F(StreamingRetryTest, TheConfigRetriesTheStreamsOfTheTestService) {
  const PolicySet policies = MustParse(kRetryAll);
  const BuiltInRetryConfig config =
      BuiltInRetryConfig::Build(PolicySetAccess::Table(policies), MethodCatalog::Linked());
  EXPECT_THAT(config.retried_streams(),
              ::testing::ElementsAre("/resilience.test.TestService/Bidi",
                                     "/resilience.test.TestService/ClientStream",
                                     "/resilience.test.TestService/ServerStream"));
}

TEST_F(StreamingRetryTest, AStreamThatFailsBeforeItsFirstResponseIsRetried) {
  Connect(kRetryAll);
  for (CallType type : kStreamTypes) {
    for (Flavour flavour : kFlavours) {
      SCOPED_TRACE(absl::StrCat(Name(type), " ", Name(flavour)));
      const int before = service_.Runs(MethodName(type));
      service_.Next(2, Script::kFailFirst);
      const CallResult r = MakeCall(*stub_, type, flavour);
      EXPECT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
      EXPECT_EQ(service_.Runs(MethodName(type)) - before, 3);
      if (type != CallType::kClientStream) {
        EXPECT_EQ(r.messages_received, type == CallType::kServerStream ? 3 : 1);
      }
    }
  }
}

TEST_F(StreamingRetryTest, AStreamThatAlwaysFailsBeforeAResponseStopsAtMaxAttempts) {
  Connect(kRetryAll);
  for (CallType type : kStreamTypes) {
    SCOPED_TRACE(Name(type));
    const int before = service_.Runs(MethodName(type));
    service_.Next(100, Script::kFailFirst);
    const CallResult r = MakeCall(*stub_, type, Flavour::kSync);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(service_.Runs(MethodName(type)) - before, 3);
  }
  service_.Next(0, Script::kOk);
}

TEST_F(StreamingRetryTest, AStreamThatFailsAfterAResponseIsNotRetried) {
  Connect(kRetryAll);
  for (CallType type : kStreamTypes) {
    for (Flavour flavour : kFlavours) {
      SCOPED_TRACE(absl::StrCat(Name(type), " ", Name(flavour)));
      const int before = service_.Runs(MethodName(type));
      service_.Next(1, Script::kFailAfterResponse);
      const CallResult r = MakeCall(*stub_, type, flavour);
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
      EXPECT_EQ(service_.Runs(MethodName(type)) - before, 1);
      if (type != CallType::kClientStream) {
        EXPECT_EQ(r.messages_received, 1);
      }
    }
  }
}

TEST_F(StreamingRetryTest, AUnaryCallIsAttemptedMaxAttemptsTimesNotSquared) {
  Connect(kRetryAll);
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    const int before = service_.Runs("Unary");
    service_.Next(100, Script::kFailFirst);
    const CallResult r = MakeCall(*stub_, CallType::kUnary, flavour);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
    // 3 by the RetryInterceptor; 9 if gRPC retried each of its attempts.
    EXPECT_EQ(service_.Runs("Unary") - before, 3);
  }
  EXPECT_EQ(resilience_->Stats("/resilience.test.TestService/Unary").retries, 6);
  service_.Next(0, Script::kOk);
}

TEST_F(StreamingRetryTest, WithoutARetryPolicyNothingIsRetried) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
               "timeout": "10s"}]})");
  for (CallType type : kAllCallTypes) {
    SCOPED_TRACE(Name(type));
    const int before = service_.Runs(MethodName(type));
    service_.Next(1, Script::kFailFirst);
    const CallResult r = MakeCall(*stub_, type, Flavour::kSync);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(service_.Runs(MethodName(type)) - before, 1);
  }
}

TEST_F(StreamingRetryTest, ACallersServiceConfigIsKeptWithAWarning) {
  policies_ = MustParse(kRetryAll);
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"methodConfig": [{"name": [{}], "timeout": "10s"}]})");
  const std::vector<std::string> warnings = ConfigureBuiltInRetries(policies_, args);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("the service config given (GRPC_ARG_SERVICE_CONFIG) is kept"));
  // Streams are then not retried.
  stub_ = resilience::test::TestService::NewStub(server_->NewChannel({}, args));
  service_.Next(1, Script::kFailFirst);
  EXPECT_EQ(MakeCall(*stub_, CallType::kServerStream, Flavour::kSync).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.Runs("ServerStream"), 1);
}

TEST_F(StreamingRetryTest, ACallersRetryPolicySwitchesGrpcRetriesOff) {
  policies_ = MustParse(kRetryAll);
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"methodConfig": [{"name": [{}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  const std::vector<std::string> warnings = ConfigureBuiltInRetries(policies_, args);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[1], HasSubstr("GRPC_ARG_ENABLE_RETRIES = 0"));
  // The RetryInterceptor alone retries the unary call.
  ResilientChannel made = NewChainChannel(*server_, policies_, ClientResilience::Options(), args);
  resilience_ = made.resilience;
  stub_ = resilience::test::TestService::NewStub(made.channel);
  service_.Next(100, Script::kFailFirst);
  EXPECT_EQ(MakeCall(*stub_, CallType::kUnary, Flavour::kSync).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.Runs("Unary"), 3);
  service_.Next(0, Script::kOk);
}

// gRPC takes the config (a rejected one fails every call, as the control
// shows) with each of its forms: a default {} with waitForReady, a service
// entry with a name only (a shadow), exact stream entries with retryPolicy
// and waitForReady, and retryThrottling.
TEST_F(StreamingRetryTest, GrpcAcceptsTheGeneratedConfig) {
  const PolicySet policies = MustParse(R"({"methodConfig": [
      {"name": [{}], "waitForReady": true},
      {"name": [{"service": "resilience.test.TestService"}], "waitForReady": false,
       "retryPolicy": {"maxAttempts": 8, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
                       "backoffMultiplier": 1.5, "jitter": 0.3,
                       "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}},
      {"name": [{"service": "other.Service"}], "timeout": "1s"}],
      "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.0001}})");
  const BuiltInRetryConfig config =
      BuiltInRetryConfig::Build(PolicySetAccess::Table(policies), MethodCatalog::Linked());
  EXPECT_THAT(config.service_config(), HasSubstr(R"({"name": [{}], "waitForReady": true})"));
  EXPECT_THAT(config.service_config(), HasSubstr(R"({"name": [{"service": "other.Service"}]})"));
  EXPECT_THAT(config.service_config(), HasSubstr(R"("tokenRatio": 0.001)"));

  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(config.service_config());
  auto stub = resilience::test::TestService::NewStub(server_->NewChannel({}, args));
  for (CallType type : kAllCallTypes) {
    SCOPED_TRACE(Name(type));
    EXPECT_TRUE(MakeCall(*stub, type, Flavour::kSync).status.ok());
  }
  service_.Next(4, Script::kFailFirst);  // capped at 5 attempts: still served
  EXPECT_TRUE(MakeCall(*stub, CallType::kBidi, Flavour::kSync).status.ok());

  grpc::ChannelArguments bad;
  bad.SetServiceConfigJSON(R"({"methodConfig": [{"name": [{}],
      "retryPolicy": {"maxAttempts": 1}}]})");
  auto control = resilience::test::TestService::NewStub(server_->NewChannel({}, bad));
  EXPECT_FALSE(MakeCall(*control, CallType::kUnary, Flavour::kSync).status.ok());
}

// A port with nothing listening, held so that no other server takes it;
// SO_REUSEPORT lets a test server listen on it later.
class ReservedPort {
 public:
  ReservedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      socklen_t len = sizeof(addr);
      if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port_ = ntohs(addr.sin_port);
      }
    }
  }
  ~ReservedPort() { close(fd_); }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class WaitForReadyTest : public ::testing::Test {
 protected:
  // A unary call with `deadline` on a channel to `target` for `policy_json`;
  // how long it took.
  grpc::Status UnaryCall(const std::string& target, const std::string& policy_json,
                         absl::Duration deadline, absl::Duration* took,
                         CallType type = CallType::kUnary) {
    ResilientChannel made =
        CreateResilientChannel(target, grpc::InsecureChannelCredentials(), MustParse(policy_json));
    EXPECT_THAT(made.warnings, IsEmpty());
    std::shared_ptr<grpc::Channel> channel = made.channel;
    auto stub = resilience::test::TestService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    Req request;
    Resp response;
    const absl::Time start = absl::Now();
    grpc::Status status;
    if (type == CallType::kUnary) {
      status = stub->Unary(&context, request, &response);
    } else {
      auto reader = stub->ServerStream(&context, request);
      while (reader->Read(&response)) {
      }
      status = reader->Finish();
    }
    *took = absl::Now() - start;
    return status;
  }
};

// gRPC 1.51 itself, without our interceptors or loader, on the forms of entry
// BuiltInRetryConfig writes: the default name {} applies its waitForReady,
// and an entry with a name only takes its method out of the default.
TEST_F(WaitForReadyTest, GrpcAppliesTheDefaultNameAndNameOnlyEntries) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"methodConfig": [{"name": [{}], "waitForReady": true}, )"
                            R"({"name": [{"service": "resilience.test.TestService", )"
                            R"("method": "Unary"}]}]})");
  auto stub = resilience::test::TestService::NewStub(
      grpc::CreateCustomChannel(port.address(), grpc::InsecureChannelCredentials(), args));
  Req request;
  Resp response;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    const absl::Time start = absl::Now();
    const grpc::Status s = stub->Unary(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  }
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    const absl::Time start = absl::Now();
    auto reader = stub->ServerStream(&context, request);
    while (reader->Read(&response)) {
    }
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));
  }
}

TEST_F(WaitForReadyTest, WithoutItACallToAnUnreachablePortFailsAtOnce) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  absl::Duration took;
  const grpc::Status s = UnaryCall(
      port.address(), R"({"methodConfig": [{"name": [{}], "timeout": "30s"}]})",
      absl::Seconds(5), &took);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_LT(took, absl::Seconds(4));
}

TEST_F(WaitForReadyTest, TheDefaultsWaitForReadyMakesACallWaitForItsDeadline) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  absl::Duration took;
  const grpc::Status s = UnaryCall(
      port.address(), R"({"methodConfig": [{"name": [{}], "waitForReady": true}]})",
      absl::Seconds(1), &took);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_GE(took, absl::Milliseconds(900));
}

TEST_F(WaitForReadyTest, AppliesToTheRetryInterceptorsAttempts) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  absl::Duration took;
  const grpc::Status s = UnaryCall(port.address(), R"({"methodConfig": [{
      "name": [{"service": "resilience.test.TestService"}], "waitForReady": true,
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                      "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
                                   absl::Seconds(1), &took);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_GE(took, absl::Milliseconds(900));
}

TEST_F(WaitForReadyTest, AnExactNameWithoutItIsNotGivenTheDefaults) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  const std::string policy = R"({"methodConfig": [
      {"name": [{}], "waitForReady": true},
      {"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
       "timeout": "30s"}]})";
  absl::Duration took;
  grpc::Status s = UnaryCall(port.address(), policy, absl::Seconds(5), &took);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_LT(took, absl::Seconds(4));
  s = UnaryCall(port.address(), policy, absl::Seconds(1), &took, CallType::kServerStream);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
}

TEST_F(WaitForReadyTest, ACallWaitsForAServerThatStartsWithinItsDeadline) {
  ReservedPort port;
  ASSERT_NE(port.port(), 0);
  StreamService service;
  std::unique_ptr<TestServer> server;
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    TestServer::Options options;
    options.services.push_back(&service);
    options.configure = [&port](grpc::ServerBuilder& builder) {
      builder.AddListeningPort(port.address(), grpc::InsecureServerCredentials());
    };
    server = TestServer::Start(std::move(options));
  });
  absl::Duration took;
  const grpc::Status s = UnaryCall(
      port.address(), R"({"methodConfig": [{"name": [{}], "waitForReady": true}]})",
      absl::Seconds(10), &took);
  starter.join();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_EQ(service.Runs("Unary"), 1);
}

}  // namespace
}  // namespace resilience::testing
