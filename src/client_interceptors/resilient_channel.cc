#include "src/client_interceptors/resilient_channel.h"

#include "grpc/grpc.h"
#include "grpcpp/create_channel.h"
#include "src/client_interceptors/breaker_interceptor.h"
#include "src/client_interceptors/retry_interceptor.h"
#include "src/client_interceptors/timeout_interceptor.h"

namespace resilience {

ClientInterceptorFactoryList ClientInterceptorFactories(std::shared_ptr<ClientResilience> state) {
  ClientInterceptorFactoryList factories;
  factories.push_back(std::make_unique<RetryInterceptorFactory>(state));    // outermost
  factories.push_back(std::make_unique<TimeoutInterceptorFactory>(state));
  factories.push_back(std::make_unique<BreakerInterceptorFactory>(state));  // sees every attempt
  return factories;
}

void DisableBuiltInRetries(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
}

std::shared_ptr<grpc::Channel> CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, grpc::ChannelArguments args,
    std::shared_ptr<ClientResilience>* state) {
  ClientResilience::Options options;
  options.name = target;
  auto resilience = std::make_shared<ClientResilience>(policies, options);
  if (state != nullptr) *state = resilience;
  DisableBuiltInRetries(args);
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      target, credentials, args, ClientInterceptorFactories(std::move(resilience)));
}

}  // namespace resilience
