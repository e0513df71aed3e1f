/// \file include/grpc_resilience/resilient_channel.h
///
/// One call builds the client chain, retry -> timeout -> breaker, from a
/// policy set, on a channel whose service config hands the retries of
/// streaming calls to gRPC's built-in retry.
///
/// Who retries what:
///  - Unary calls: our retry (retryPolicy, perAttemptTimeout, jitter, retry
///    budget, pushback), each attempt seen by the breaker.
///  - Streaming calls (client-, server-streaming, bidi): gRPC's built-in
///    retry, from a service config built from the policies: a stream is
///    retried only until gRPC commits it (first response headers or
///    message), and the breaker sees the call once, not each attempt.
///  - Never both: the service config has no retryPolicy that a unary method
///    could match.
///  - gRPC's transparent retries (of attempts that never reached the server)
///    stay on, beneath both.
/// waitForReady of a policy goes into the same service config, so it applies
/// to every call and every attempt of the methods it names. So do the policy
/// file's loadBalancingPolicy, loadBalancingConfig and healthCheckConfig,
/// with gRPC's meaning, as the file writes them; no outlier detection is
/// added (gRPC 1.51's counts NOT_FOUND and every other status but OK as the
/// replica's failure: docs/replicas.md).
///
/// Example:
/// \code
///   absl::StatusOr<resilience::PolicySet> policies =
///       resilience::PolicySet::FromJsonFile("policies.json");
///   resilience::ResilientChannel channel = resilience::CreateResilientChannel(
///       "localhost:50051", grpc::InsecureChannelCredentials(), *policies);
///   auto stub = cache::v1::CacheService::NewStub(channel.channel);  // unchanged code
///   ... channel.resilience->Stats("/cache.v1.CacheService/Get").retries ...
/// \endcode
///
/// Or on a channel of your own, with your own interceptors after ours:
/// \code
///   auto resilience = std::make_shared<resilience::ClientResilience>(
///       *policies, resilience::ClientResilience::Options{});
///   auto factories = resilience::ClientInterceptorFactories(resilience);
///   grpc::ChannelArguments args;
///   for (const std::string& w : resilience::ConfigureBuiltInRetries(*policies, args)) {
///     std::cerr << "warning: " << w << "\n";
///   }
///   grpc::experimental::CreateCustomChannelWithInterceptors(target, creds, args,
///                                                          std::move(factories));
/// \endcode
///
/// A service config the name resolver returns (an xds: target, or DNS TXT
/// records where their lookup is enabled) replaces the channel's: then
/// streams are retried as it says, the policies' waitForReady reaches only
/// our retry's attempts, and a retryPolicy in it would retry unary calls
/// beneath ours.

#ifndef GRPC_RESILIENCE_RESILIENT_CHANNEL_H_
#define GRPC_RESILIENCE_RESILIENT_CHANNEL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grpc_resilience/client_resilience.h"
#include "grpc_resilience/policy.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_interceptor.h"

namespace resilience {

/// The client interceptor factories of one channel, in gRPC's order.
using ClientInterceptorFactoryList =
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>;

/// ClientInterceptorFactories()
///
/// Retry, timeout and breaker factories, in that order, sharing `state`.
/// They must come first in the channel's list: gRPC 1.51 mis-indexes the
/// retry interceptor's attempts when a factory *before* it returns nullptr
/// (the retry factory detects that case and stays out of its own attempts,
/// but the factories before it would then see attempts too).
ClientInterceptorFactoryList ClientInterceptorFactories(std::shared_ptr<ClientResilience> state);

/// ConfigureBuiltInRetries()
///
/// Prepares `args` for a channel with ClientInterceptorFactories(), as
/// CreateResilientChannel() does: sets GRPC_ARG_SERVICE_CONFIG to the
/// channel's config for `policies` (streaming retries, waitForReady, load
/// balancing and health; not set when that config is empty) and leaves gRPC's retries on. Returns
/// the warnings about `args` below, one line each; the config's own warnings
/// (settings gRPC's retry of streams cannot apply) are the policy file's, in
/// PolicySet::warnings(), and are not repeated here.
///
/// When `args` already carry a service config (SetServiceConfigJSON), it is
/// kept whole and ours is not set: warnings say what is then not applied
/// (streams' retries, waitForReady, the file's load balancing and health). If it
/// has a retryPolicy or hedgingPolicy, which could retry unary calls beneath
/// our retry, gRPC's retries are switched off (GRPC_ARG_ENABLE_RETRIES = 0,
/// with a warning), unless `args` set GRPC_ARG_ENABLE_RETRIES themselves: an
/// explicit setting is always kept.
///
/// Streaming methods are told from unary ones by the generated code linked
/// into the process. Call it once per `args`: a second call finds the first
/// one's config and keeps it.
std::vector<std::string> ConfigureBuiltInRetries(const PolicySet& policies,
                                                 grpc::ChannelArguments& args);

/// What CreateResilientChannel() builds the channel with, beside the policies.
struct ResilientChannelOptions {
  /// The channel's arguments; ConfigureBuiltInRetries() adds the service
  /// config to them.
  grpc::ChannelArguments args;
  /// Interceptors of your own, kept and placed around ours:
  ///   outer_interceptors -> retry -> timeout -> breaker -> inner_interceptors
  /// `outer` ones see each call once, as the application made it; `inner`
  /// ones see every attempt our retry makes, as it goes to the network (and
  /// no call our breaker rejected).
  ///@{
  ClientInterceptorFactoryList outer_interceptors;
  ClientInterceptorFactoryList inner_interceptors;
  ///@}
  /// Makes the inner interceptors afresh, for a channel whose policy file
  /// turns on the library's endpoint picker (loadBalancingConfig:
  /// resilience_p2c): that channel keeps a channel per endpoint, and each
  /// gets its own list, so that the inner interceptors see every attempt
  /// wherever it goes. When set, `inner_interceptors` must be empty (the
  /// target's channel gets a list from this too). Without it, a picker's
  /// attempts pass no inner interceptor (a warning says so when
  /// `inner_interceptors` is not empty).
  std::function<ClientInterceptorFactoryList()> make_inner_interceptors;
  /// Seed, name and events of the channel's ClientResilience; an empty name
  /// becomes the target.
  ClientResilience::Options resilience;
};

/// What CreateResilientChannel() made: the channel and its resilience state.
struct ResilientChannel {
  /// The channel to make stubs on; every call goes through the chain.
  std::shared_ptr<grpc::Channel> channel;
  /// Counters and breaker snapshots, per method: resilience->Stats(method).
  std::shared_ptr<ClientResilience> resilience;
  /// What the channel's arguments keep from applying
  /// (ConfigureBuiltInRetries()); the policy file's own warnings are in
  /// PolicySet::warnings(), and none of them is repeated here.
  std::vector<std::string> warnings;
};

/// CreateResilientChannel()
///
/// A channel to `target` with the chain for `policies`, the args of
/// ConfigureBuiltInRetries() and the interceptors of `options`.
ResilientChannel CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, ResilientChannelOptions options = {});

}  // namespace resilience

#endif  // GRPC_RESILIENCE_RESILIENT_CHANNEL_H_
