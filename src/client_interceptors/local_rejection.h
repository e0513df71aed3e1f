// File: src/client_interceptors/local_rejection.h
//
// Telling a call our own breaker rejected from one a server failed.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_

#include <map>

#include "grpcpp/client_context.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

// A local breaker rejection carries the kLocalRejectionKey trailer
// (metadata_keys.h), so that callers can tell it from a server's UNAVAILABLE.

// RejectedLocally()
//
// True when the call of `context`, which has ended, was rejected by the
// client's circuit breaker without reaching the network. Decided from local
// state only: the kLocalRejectionKey trailer counts only when it is the one
// the breaker wrote (the same storage), so a server that sends that trailer
// itself cannot make a call look rejected here.
bool RejectedLocally(const grpc::ClientContext& context);

// MarkRejectedLocally()
//
// Adds the kLocalRejectionKey trailer RejectedLocally() recognises to the
// trailers of a call our breaker rejected (at its PRE_RECV_STATUS).
void MarkRejectedLocally(std::multimap<grpc::string_ref, grpc::string_ref>* trailers);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
