// Channels from CreateResilientChannel() against an in-process server: gRPC's
// built-in retry retries streams from the service config BuiltInRetryConfig
// writes, the RetriedUnaryCall alone retries unary calls. Also checks that
// gRPC 1.51 takes the config's every form (the default name {}, entries with
// a name only, retryThrottling). waitForReady: wait_for_ready_test.cc.

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
#include "tests/client_interceptors/stream_service.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;


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
    // 3 by the RetriedUnaryCall; 9 if gRPC retried each of its attempts.
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
  // The RetriedUnaryCall alone retries the unary call.
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

}  // namespace
}  // namespace resilience::testing
