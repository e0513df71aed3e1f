#include "src/client_interceptors/resilient_channel.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"
#include "grpc/support/log.h"
#include "grpcpp/create_channel.h"
#include "src/client_interceptors/channel_args.h"
#include "src/client_interceptors/resilient_call_factory.h"
#include "src/policy/channel_service_config.h"

namespace resilience {

ClientInterceptorFactoryList ClientInterceptorFactories(std::shared_ptr<ClientResilience> resilience) {
  const std::shared_ptr<ClientResilienceImpl>& state = resilience->impl();
  ClientInterceptorFactoryList factories;
  // One factory: each call gets one call object of ours, which runs the
  // stages retry -> timeout -> breaker -> metrics (docs/client-chain.md).
  factories.push_back(std::make_unique<ResilientCallFactory>(std::move(state)));
  return factories;
}

std::vector<std::string> ConfigureBuiltInRetries(const PolicySet& policies,
                                                 grpc::ChannelArguments& args,
                                                 const MethodCatalog& catalog) {
  const ChannelServiceConfig channel_config =
      ChannelServiceConfig::Build(PolicySetAccess::Table(policies), catalog);
  const BuiltInRetryConfig& config = channel_config.retries();
  // The config's own warnings are the policy file's: the loader put them in
  // PolicySet::warnings() already, so a program that prints both lists
  // prints each once.
  // One file serves both sides: `throttle` and `faultInjection` are the
  // server's, `bulkhead` the client's; neither side warns of the other's.
  std::vector<std::string> warnings;
  const std::optional<int> enable_retries = IntArg(args, GRPC_ARG_ENABLE_RETRIES);
  const std::optional<std::string> callers = StringArg(args, GRPC_ARG_SERVICE_CONFIG);
  if (callers.has_value()) {
    if (!config.service_config().empty()) {
      warnings.push_back(absl::StrCat(
          "channel arguments: the service config given (GRPC_ARG_SERVICE_CONFIG) is kept "
          "instead of the policies' own, so gRPC retries none of their streaming methods (",
          config.retried_streams().size(), ") and applies none of their waitForReady"));
    }
    if (channel_config.load_balancing()) {
      warnings.push_back(
          "channel arguments: the service config given (GRPC_ARG_SERVICE_CONFIG) is kept "
          "instead of the policies' own, so the policy file's loadBalancingPolicy, "
          "loadBalancingConfig and healthCheckConfig are not applied (the given config's "
          "own are)");
    }
    if (absl::StrContains(*callers, "retryPolicy") ||
        absl::StrContains(*callers, "hedgingPolicy")) {
      if (!enable_retries.has_value()) {
        args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
        warnings.push_back(
            "channel arguments: the service config given has a retryPolicy or hedgingPolicy, "
            "which could retry unary calls beneath the RetryInterceptor: gRPC's retries are "
            "switched off (GRPC_ARG_ENABLE_RETRIES = 0)");
      } else if (*enable_retries != 0) {
        warnings.push_back(
            "channel arguments: the service config given has a retryPolicy or hedgingPolicy "
            "and GRPC_ARG_ENABLE_RETRIES is set: unary calls it names may be retried both by "
            "gRPC and by the RetryInterceptor");
      }
    }
    return warnings;
  }
  if (channel_config.service_config().empty()) return warnings;
  args.SetServiceConfigJSON(channel_config.service_config());
  if (enable_retries.has_value() && *enable_retries == 0 && !config.retried_streams().empty()) {
    warnings.push_back(absl::StrCat(
        "channel arguments: GRPC_ARG_ENABLE_RETRIES = 0, so the streams the policies retry (",
        config.retried_streams().size(), " methods) are not retried"));
  }
  return warnings;
}

std::vector<std::string> ConfigureBuiltInRetries(const PolicySet& policies,
                                                 grpc::ChannelArguments& args) {
  return ConfigureBuiltInRetries(policies, args, MethodCatalog::Linked());
}

std::shared_ptr<ClientResilience> MakeClientResilience(PolicySet policies,
                                                       ClientResilience::Options options,
                                                       Clock& clock) {
  return std::make_shared<ClientResilience>(
      std::make_shared<ClientResilienceImpl>(std::move(policies), std::move(options), clock));
}

ResilientChannel CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, ResilientChannelOptions options) {
  return CreateResilientChannel(target, credentials, policies, std::move(options),
                                Clock::Real());
}

ResilientChannel CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, ResilientChannelOptions options, Clock& clock) {
  ResilientChannel made;
  made.warnings = ConfigureBuiltInRetries(policies, options.args);
  if (options.resilience.name.empty()) options.resilience.name = target;
  made.resilience = MakeClientResilience(policies, std::move(options.resilience), clock);
  // Before the channel exists, so before any call: breaker.recoveryProbe's
  // probes go on a channel of their own to the same target.
  made.resilience->impl()->EnableHealthProbes(target, credentials, options.args);
  // The library's endpoint picker, when the file asks for it: before the
  // chain's factory, which hands it to every call.
  if (options.make_inner_interceptors && !options.inner_interceptors.empty()) {
    made.warnings.push_back(
        "ResilientChannelOptions: inner_interceptors is ignored as make_inner_interceptors is "
        "set (it makes the inner interceptors of every channel)");
    options.inner_interceptors.clear();
  }
  for (std::string& warning : made.resilience->impl()->EnableRouting(
           target, credentials, options.args, options.make_inner_interceptors)) {
    made.warnings.push_back(std::move(warning));
  }
  if (made.resilience->impl()->router() != nullptr && !options.inner_interceptors.empty()) {
    made.warnings.push_back(
        "ResilientChannelOptions: inner_interceptors see only the calls gRPC routes (streams, "
        "calls not from a generated stub), not the attempts of the library's endpoint picker "
        "(loadBalancingConfig: resilience_p2c); give make_inner_interceptors to have them on "
        "every endpoint's channel");
  }
  ClientInterceptorFactoryList chain = std::move(options.outer_interceptors);
  for (auto& ours : ClientInterceptorFactories(made.resilience)) chain.push_back(std::move(ours));
  if (options.make_inner_interceptors) {
    for (auto& inner : options.make_inner_interceptors()) chain.push_back(std::move(inner));
  }
  for (auto& inner : options.inner_interceptors) chain.push_back(std::move(inner));
  made.channel = grpc::experimental::CreateCustomChannelWithInterceptors(
      target, credentials, options.args, std::move(chain));
  return made;
}

}  // namespace resilience
