// File: tests/testing/guarded_server.h
//
// A TestServer set up the way the README sets up a server: grpc-resilience's
// interceptors added with AddServerInterceptors(), the service registered
// behind the guard with RegisterGuardedService().

#ifndef GRPC_RESILIENCE_TESTS_TESTING_GUARDED_SERVER_H_
#define GRPC_RESILIENCE_TESTS_TESTING_GUARDED_SERVER_H_

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "grpcpp/server_builder.h"
#include "grpc_resilience/policy.h"
#include "src/server_interceptors/server_interceptors.h"
#include "src/core/clock.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {

struct GuardedServer {
  std::shared_ptr<ServerResilience> resilience;
  std::unique_ptr<TestServer> server;  // null: it did not start
};

// StartGuardedServer()
//
// A TestServer (localhost:0) whose builder gets
// AddServerInterceptors(builder, policies, options) and then `service`, an
// implementation of the generated service `Generated` (sync or callback
// API), behind the guard: RegisterGuardedService(), a test failure if it
// refuses. The throttles run on `clock` (it must outlive the server).
// `service` must outlive the server.
//
// Example:
//   GuardedServer started = StartGuardedServer<resilience::test::TestService>(
//       policies, &service);
//   ASSERT_NE(started.server, nullptr);
//   auto stub = resilience::test::TestService::NewStub(started.server->NewChannel());
template <typename Generated>
GuardedServer StartGuardedServer(PolicySet policies, grpc::Service* service,
                                 ServerResilienceOptions options = {},
                                 Clock& clock = Clock::Real()) {
  GuardedServer started;
  // TestServer::Options::configure is a std::function, which must be
  // copyable: the move-only options wait in a shared_ptr.
  auto pending = std::make_shared<ServerResilienceOptions>(std::move(options));
  TestServer::Options server_options;
  server_options.configure = [&started, &policies, pending, service,
                              &clock](grpc::ServerBuilder& builder) {
    started.resilience =
        AddServerInterceptors(builder, std::move(policies), std::move(*pending), clock);
    const absl::Status registered = started.resilience->RegisterGuardedService(
        builder, service, Generated::service_full_name());
    EXPECT_TRUE(registered.ok()) << registered;
  };
  started.server = TestServer::Start(std::move(server_options));
  return started;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_GUARDED_SERVER_H_
