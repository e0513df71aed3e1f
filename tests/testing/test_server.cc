#include "tests/testing/test_server.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace resilience::testing {

std::unique_ptr<TestServer> TestServer::Start(Options options) {
  std::unique_ptr<TestServer> server(new TestServer());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &server->port_);
  for (grpc::Service* service : options.services) builder.RegisterService(service);
  if (!options.interceptors.empty()) {
    builder.experimental().SetInterceptorCreators(std::move(options.interceptors));
  }
  if (options.configure) options.configure(builder);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) return nullptr;
  return server;
}

TestServer::~TestServer() { Shutdown(); }

std::string TestServer::address() const { return absl::StrCat("localhost:", port_); }

std::shared_ptr<grpc::Channel> TestServer::NewChannel(ClientInterceptorFactories interceptors,
                                                      const grpc::ChannelArguments& args) const {
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address(), grpc::InsecureChannelCredentials(), args, std::move(interceptors));
}

void TestServer::Shutdown(absl::Duration grace) {
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

}  // namespace resilience::testing
