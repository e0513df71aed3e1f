// A ScriptedService on an in-process server and a channel to it with the
// client chain for a policy written inline.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CLIENT_TEST_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CLIENT_TEST_FIXTURE_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/client_interceptors/resilient_channel.h"
#include "tests/client_interceptors/scripted_service.h"
#include "tests/testing/chain_channel.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {

class ClientInterceptorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TestServer::Options options;
    options.services.push_back(&service_);
    server_ = TestServer::Start(std::move(options));
    ASSERT_NE(server_, nullptr);
  }

  // A channel with the chain for `policy_json`; the breakers use `clock`.
  void Connect(const std::string& policy_json, Clock& clock = Clock::Real(),
               std::shared_ptr<ResilienceEvents> events = nullptr) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    ClientResilience::Options options;
    options.seed = 7;
    options.name = "test-channel";
    options.events = std::move(events);
    ResilientChannel made = NewChainChannel(*server_, *std::move(policies), options, {}, clock);
    resilience_ = std::move(made.resilience);
    channel_ = std::move(made.channel);
    stub_ = resilience::test::TestService::NewStub(channel_);
  }

  grpc::Status Unary(grpc::ClientContext* context = nullptr,
                     absl::Duration deadline = absl::Seconds(10)) {
    grpc::ClientContext local;
    if (context == nullptr) context = &local;
    if (deadline != absl::InfiniteDuration()) {
      context->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    }
    resilience::test::Req request;
    request.set_text("hi");
    resilience::test::Resp response;
    grpc::Status status = stub_->Unary(context, request, &response);
    if (status.ok()) {
      EXPECT_EQ(response.text(), "echo:hi");
    }
    return status;
  }

  ClientMethodStats Stats(const char* method = "/resilience.test.TestService/Unary") {
    return resilience_->Stats(method);
  }

  ScriptedService service_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<ClientResilience> resilience_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CLIENT_TEST_FIXTURE_H_
