/// \file include/grpc_resilience/client.h
///
/// Everything a client needs: a channel whose calls go through retry ->
/// timeout -> circuit breaker per the policies, its stats, and the
/// local-rejection check.
///
/// \code
///   #include "grpc_resilience/client.h"
///
///   resilience::ResilientChannel resilient = resilience::CreateResilientChannel(
///       "localhost:50051", grpc::InsecureChannelCredentials(), *policies);
///   for (const std::string& w : resilient.warnings) std::cerr << w << "\n";
///   auto stub = MyService::NewStub(resilient.channel);
///   ...
///   if (!status.ok() && resilience::RejectedLocally(context)) { /* our breaker said no */ }
/// \endcode
///
/// What each setting means on the client: docs/client-semantics.md.

#ifndef GRPC_RESILIENCE_CLIENT_H_
#define GRPC_RESILIENCE_CLIENT_H_

#include "grpc_resilience/client_resilience.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/fallback.h"
#include "grpc_resilience/local_rejection.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/resilient_channel.h"

#endif  // GRPC_RESILIENCE_CLIENT_H_
