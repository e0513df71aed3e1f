/// \file include/grpc_resilience/local_rejection.h
///
/// Telling a call our own breaker or bulkhead rejected from one a server
/// failed.

#ifndef GRPC_RESILIENCE_LOCAL_REJECTION_H_
#define GRPC_RESILIENCE_LOCAL_REJECTION_H_

#include "grpc_resilience/export.h"
#include "grpcpp/client_context.h"

namespace resilience {

/// RejectedLocally()
///
/// True when the call of `context`, which has ended, was rejected by the
/// client's circuit breaker or its bulkhead (a policy's `bulkhead`) without
/// reaching the network (its status is UNAVAILABLE, as a server's failure
/// could be). Decided from local state only: the trailer the library writes
/// (x-resilience-local-rejection: breaker or bulkhead) counts only when it is
/// the one the library wrote (the same storage), so a server that sends that
/// trailer itself cannot make a call look rejected here.
GRPC_RESILIENCE_EXPORT bool RejectedLocally(const grpc::ClientContext& context);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_LOCAL_REJECTION_H_
