// File: src/client_interceptors/local_rejection.h
//
// Telling a call our own breaker rejected from one a server failed.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_

#include "grpcpp/client_context.h"

namespace resilience {

// The trailer a local breaker rejection carries, so that callers and the
// retry interceptor can tell it from a server's UNAVAILABLE.
inline constexpr char kLocalRejectionKey[] = "x-resilience-local-rejection";

// RejectedLocally()
//
// True when the call of `context`, which has ended, was rejected by the
// client's circuit breaker without reaching the network. Decided from local
// state only: the kLocalRejectionKey trailer counts only when it is the one
// the breaker wrote (the same storage), so a server that sends that trailer
// itself cannot make a call look rejected here.
bool RejectedLocally(const grpc::ClientContext& context);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
