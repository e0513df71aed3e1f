// File: src/client_interceptors/resilient_channel.h
//
// One call builds the client chain, retry -> timeout -> breaker, from a
// policy set.
//
// Example:
//   absl::StatusOr<resilience::PolicySet> policies =
//       resilience::PolicySet::FromJsonFile("policies.json");
//   std::shared_ptr<grpc::Channel> channel = resilience::CreateResilientChannel(
//       "localhost:50051", grpc::InsecureChannelCredentials(), *policies);
//   auto stub = cache::v1::CacheService::NewStub(channel);  // unchanged code
//
// Or on a channel of your own, with your own interceptors after ours:
//   auto resilience = std::make_shared<resilience::ClientResilience>(*policies, {});
//   auto factories = resilience::ClientInterceptorFactories(resilience);
//   grpc::ChannelArguments args;
//   resilience::DisableBuiltInRetries(args);
//   grpc::experimental::CreateCustomChannelWithInterceptors(target, creds, args,
//                                                          std::move(factories));

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/client_resilience.h"
#include "src/policy/policy_set.h"

namespace resilience {

using ClientInterceptorFactoryList =
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>;

// ClientInterceptorFactories()
//
// Retry, timeout and breaker factories, in that order, sharing `state`.
// They must come first in the channel's list: gRPC 1.51 mis-indexes the
// retry interceptor's attempts when a factory *before* it returns nullptr
// (the retry factory detects that case and stays out of its own attempts,
// but the factories before it would then see attempts too).
ClientInterceptorFactoryList ClientInterceptorFactories(std::shared_ptr<ClientResilience> state);

// DisableBuiltInRetries()
//
// Turns off gRPC's own retries (on by default in 1.51 when a service config
// has a retryPolicy), which would run beneath the interceptors, invisible to
// the breaker, and multiply the attempts.
void DisableBuiltInRetries(grpc::ChannelArguments& args);

// CreateResilientChannel()
//
// A channel to `target` with the chain for `policies` and built-in retries
// disabled. If `state` is given, it receives the channel's ClientResilience
// (counters and breaker snapshots per method).
std::shared_ptr<grpc::Channel> CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, grpc::ChannelArguments args = grpc::ChannelArguments(),
    std::shared_ptr<ClientResilience>* state = nullptr);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_
