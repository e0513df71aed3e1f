// File: tests/testing/chain_channel.h
//
// A channel to a TestServer through grpc-resilience's client chain.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_CHAIN_CHANNEL_H_
#define GRPC_RESILIENCE_TESTS_TESTING_CHAIN_CHANNEL_H_

#include <memory>
#include <utility>

#include "grpcpp/support/channel_arguments.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/core/clock.h"
#include "grpc_resilience/policy.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {

// NewChainChannel()
//
// A channel to `server` with `args`, through the chain of a new
// ClientResilience for `policies` and `options`, its breakers on `clock`
// (::resilience::ClientInterceptorFactories()). Unlike
// CreateResilientChannel(), `args` are taken as they are: no service config
// of the policies, so gRPC retries no streams (warnings stays empty).
//
// Example:
//   ResilientChannel made = NewChainChannel(*server, policies, {});
//   auto stub = resilience::test::TestService::NewStub(made.channel);
//   ... made.resilience->Stats("/resilience.test.TestService/Unary") ...
inline ResilientChannel NewChainChannel(const TestServer& server, PolicySet policies,
                                        ClientResilience::Options options,
                                        const grpc::ChannelArguments& args = {},
                                        Clock& clock = Clock::Real()) {
  ResilientChannel made;
  made.resilience = MakeClientResilience(std::move(policies), std::move(options), clock);
  made.channel = server.NewChannel(::resilience::ClientInterceptorFactories(made.resilience), args);
  return made;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_CHAIN_CHANNEL_H_
