// waitForReady from the policy reaches every call of a channel from
// CreateResilientChannel(), the RetriedUnaryCall's attempts included, in
// every form gRPC 1.51 takes (the default name {}, entries with a name
// only).

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
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/stream_service.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

TEST_F(WaitForReadyTest, AppliesToTheRetriedUnaryCallsAttempts) {
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
