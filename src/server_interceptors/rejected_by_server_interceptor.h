// File: src/server_interceptors/rejected_by_server_interceptor.h
//
// How a handler learns that it should not do the work of a call.
//
// Server interceptors in gRPC 1.51 cannot skip the handler: it runs for every
// call. When a server interceptor rejects a call (a throttle limit, an
// injected abort, a client that went away during an injected delay), it marks
// the call, and the interceptor replaces whatever status the handler returns.
// Handlers that do real work should start with:
//
//   if (resilience::RejectedByServerInterceptor(*context)) return grpc::Status::OK;

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_BY_SERVER_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_BY_SERVER_INTERCEPTOR_H_

#include <map>

#include "grpcpp/server_context.h"
#include "grpcpp/support/string_ref.h"

namespace resilience {

// The metadata key a rejecting interceptor adds to the call's received
// metadata. A client cannot set it: the interceptors remove any copy the
// client sent before deciding.
inline constexpr char kRejectedMarkerKey[] = "x-resilience-rejected";

// RejectedByServerInterceptor()
//
// True when a grpc-resilience server interceptor rejected this call; the
// handler should return at once (its status is replaced).
bool RejectedByServerInterceptor(const grpc::ServerContextBase& context);

namespace internal {

// Marks the call in `metadata` (the call's received initial metadata) with
// `reason`, which must have static storage ("throttled", "fault", "expired").
void MarkRejected(std::multimap<grpc::string_ref, grpc::string_ref>* metadata,
                  const char* reason);
// True if `metadata` carries the mark.
bool IsMarkedRejected(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);
// Removes any mark (a client may not send one).
void ClearRejectedMark(std::multimap<grpc::string_ref, grpc::string_ref>* metadata);

}  // namespace internal
}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_BY_SERVER_INTERCEPTOR_H_
