// File: src/client_interceptors/resilient_channel.h
//
// The library's own routes to a resilient channel, beside the public ones
// (grpc_resilience/resilient_channel.h): a method catalog of your choice for
// ConfigureBuiltInRetries(), and a clock for the breakers (tests, benches
// and experiments run them on a SimulatedClock).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_

#include <memory>
#include <string>
#include <vector>

#include "grpc_resilience/resilient_channel.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/core/clock.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

// ConfigureBuiltInRetries()
//
// As the public one, with `catalog` telling streaming methods from unary
// ones (the public one uses MethodCatalog::Linked(): every method whose
// generated code is linked into the process).
std::vector<std::string> ConfigureBuiltInRetries(const PolicySet& policies,
                                                 grpc::ChannelArguments& args,
                                                 const MethodCatalog& catalog);

// MakeClientResilience()
//
// A ClientResilience whose breakers run on `clock` (which must outlive
// every channel using it).
std::shared_ptr<ClientResilience> MakeClientResilience(PolicySet policies,
                                                       ClientResilience::Options options,
                                                       Clock& clock);

// CreateResilientChannel()
//
// As the public one, with the breakers on `clock` (which must outlive the
// channel).
ResilientChannel CreateResilientChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const PolicySet& policies, ResilientChannelOptions options, Clock& clock);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CHANNEL_H_
