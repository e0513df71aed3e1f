/// \file include/grpc_resilience/criticality.h
///
/// Setting a call's criticality on the client, and carrying a server call's
/// criticality over to the calls it makes (docs/criticality.md).
///
/// Example:
/// \code
///   grpc::ClientContext context;
///   resilience::SetCriticality(context, resilience::Criticality::kSheddable);
///   stub->Prefetch(&context, request, &response);
///
///   // In a handler, for the calls it makes on its caller's behalf:
///   grpc::ClientContext downstream;
///   resilience::PropagateCriticality(*server_context, downstream);
/// \endcode

#ifndef GRPC_RESILIENCE_CRITICALITY_H_
#define GRPC_RESILIENCE_CRITICALITY_H_

#include <optional>

#include "grpc_resilience/criticality_level.h"
#include "grpc_resilience/export.h"
#include "grpcpp/client_context.h"
#include "grpcpp/server_context.h"

namespace resilience {

/// SetCriticality()
///
/// The call made with `context` carries `level` in its
/// resilience-criticality header. Call it once, before the call starts. A
/// server with this library judges the call at that level, lowered to the
/// method's ceiling (a client cannot raise its calls above what the server
/// trusts); without it, the server uses the method's default (CRITICAL
/// unless its policy says otherwise). A client that sets nothing sends no
/// header. The client's SRE throttle keeps its statistics per level.
GRPC_RESILIENCE_EXPORT void SetCriticality(grpc::ClientContext& context, Criticality level);

/// CriticalityOf()
///
/// The level the call of `server_context` claims in its header: nullopt
/// when it carries none or a value that names no level. It is the claim, not
/// the level the server's throttle judged it at (which the method's ceiling
/// and default decide).
GRPC_RESILIENCE_EXPORT std::optional<Criticality> CriticalityOf(
    const grpc::ServerContextBase& server_context);

/// PropagateCriticality()
///
/// The call made with `to` carries the level the server call of `from`
/// claims (CriticalityOf()); nothing when it claims none, so the next server
/// applies its own default. Returns whether a level was set. Call it once,
/// before the call starts.
GRPC_RESILIENCE_EXPORT bool PropagateCriticality(const grpc::ServerContextBase& from,
                                                 grpc::ClientContext& to);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_CRITICALITY_H_
