// File: src/client_interceptors/local_rejection.h
//
// The breaker's and the bulkhead's side of RejectedLocally() (grpc_resilience/local_rejection.h):
// the trailer it writes on a call it rejected.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_

#include <map>

#include "grpc_resilience/local_rejection.h"
#include "grpcpp/client_context.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

// A local rejection (breaker or bulkhead) carries the kLocalRejectionKey trailer
// (metadata_keys.h), so that callers can tell it from a server's UNAVAILABLE.

// Who refused the call: the trailer's value says ("breaker", "bulkhead").
enum class LocalRejector { kBreaker, kBulkhead };

// MarkRejectedLocally()
//
// Adds the kLocalRejectionKey trailer RejectedLocally() recognises to the
// trailers of a call our breaker or bulkhead rejected (at its
// PRE_RECV_STATUS).
void MarkRejectedLocally(std::multimap<grpc::string_ref, grpc::string_ref>* trailers,
                         LocalRejector by = LocalRejector::kBreaker);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_REJECTION_H_
