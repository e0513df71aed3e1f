// File: tests/testing/test_server.h
//
// The end-to-end fixture: a real gRPC server in this process, listening on
// localhost:0 (a free port), with the services and server interceptors a test
// chooses, plus a helper that makes channels to it with client interceptors.
//
// Example:
//   cache_service::CacheStore store({});
//   cache_service::CacheServiceImpl service(&store);
//   TestServer::Options options;
//   options.services.push_back(&service);
//   std::unique_ptr<TestServer> server = TestServer::Start(std::move(options));
//   auto stub = cache::v1::CacheService::NewStub(server->NewChannel());

#ifndef GRPC_RESILIENCE_TESTS_TESTING_TEST_SERVER_H_
#define GRPC_RESILIENCE_TESTS_TESTING_TEST_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpcpp/support/server_interceptor.h"

namespace resilience::testing {

using ClientInterceptorFactories =
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>;
using ServerInterceptorFactories =
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>;

// TestServer
//
// Shuts down (with no grace period) when destroyed. Thread-safe.
class TestServer {
 public:
  struct Options {
    // Services to register; not owned, must outlive the server.
    std::vector<grpc::Service*> services;
    // Server interceptors, in order.
    ServerInterceptorFactories interceptors;
    // Anything else to set on the builder before it starts.
    std::function<void(grpc::ServerBuilder&)> configure;
  };

  // Start()
  //
  // nullptr if the server could not start (the test should fail).
  static std::unique_ptr<TestServer> Start(Options options);

  ~TestServer();

  int port() const { return port_; }
  // "localhost:<port>"
  std::string address() const;

  // NewChannel()
  //
  // A new channel to this server over loopback TCP with the given client
  // interceptors (in chain order) and channel arguments.
  std::shared_ptr<grpc::Channel> NewChannel(
      ClientInterceptorFactories interceptors = {},
      const grpc::ChannelArguments& args = grpc::ChannelArguments()) const;

  // Shutdown()
  //
  // Stops accepting calls; calls in flight get up to `grace` to finish.
  void Shutdown(absl::Duration grace = absl::ZeroDuration());

  grpc::Server& server() { return *server_; }

 private:
  TestServer() = default;

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_TEST_SERVER_H_
