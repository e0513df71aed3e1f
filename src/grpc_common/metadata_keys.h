// File: src/grpc_common/metadata_keys.h
//
// Every metadata key the client and server interceptors read or write, in
// one place.

#ifndef GRPC_RESILIENCE_SRC_GRPC_COMMON_METADATA_KEYS_H_
#define GRPC_RESILIENCE_SRC_GRPC_COMMON_METADATA_KEYS_H_

#include <cstring>
#include <map>
#include <optional>

#include "grpcpp/support/string_ref.h"

namespace resilience {

// gRFC A6: the number of earlier attempts of this call, on attempt N+1.
// gRPC 1.51's C++ server shows it to handlers like any other header.
inline constexpr char kPreviousAttemptsKey[] = "grpc-previous-rpc-attempts";
// The same number under go-grpc-middleware's name.
inline constexpr char kRetryAttemptKey[] = "x-retry-attempt";
// gRFC A6: a server's advice (trailer) on when to retry, in milliseconds; a
// negative or malformed value means "do not retry".
inline constexpr char kPushbackKey[] = "grpc-retry-pushback-ms";
// The trailer a call our client breaker rejected carries
// (client_interceptors/local_rejection.h).
inline constexpr char kLocalRejectionKey[] = "x-resilience-local-rejection";
// The trailer a call answered by its method's fallback carries
// (client_interceptors/fallback_stage.h).
inline constexpr char kFallbackKey[] = "x-resilience-fallback";
// A call's criticality, the level's name ("SHEDDABLE"): set by the caller
// (grpc_resilience/criticality.h), read by the server's throttle
// (docs/criticality.md).
inline constexpr char kCriticalityKey[] = "resilience-criticality";

// gRFC A51 (ORCA): a backend's load, a serialized
// xds.data.orca.v3.OrcaLoadReport (src/routing/load_report.h), in the
// trailer of a unary answer; binary metadata, which gRPC base64s on the wire
// because the key ends in "-bin".
inline constexpr char kLoadReportKey[] = "endpoint-load-metrics-bin";
// The same report under a key of ours, the one a server of ours writes: a
// gRPC 1.51 C++ client can read it, while its core parses
// endpoint-load-metrics-bin for its load-balancing policies and never
// publishes it to the application (call.cc's PublishToAppEncoder drops every
// key it knows but a listed few), so ClientContext::GetServerTrailingMetadata()
// and a client interceptor's trailers never show that one. Short: at most
// 15 characters, a std::string's inline capacity, so the key costs the
// server's trailers no allocation per call (and 12 bytes less on the wire
// than ORCA's key).
inline constexpr char kReadableLoadReportKey[] = "orca-load-bin";

// A request header of ours: the client asks for the server's load report
// (value "1"). Our client sends it on every attempt its endpoint picker
// routes, the only calls whose reports it reads; a server of ours sends
// the report only to calls that carry it, so no other caller pays for the
// trailer (docs/routing.md, "Load reports"). 15 characters, as above.
inline constexpr char kLoadReportRequestKey[] = "resilience-orca";

// The value of metadata `key` in `metadata` (a call's trailers or headers, as
// gRPC gives them), if there.
inline std::optional<grpc::string_ref> FindMetadata(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata, const char* key) {
  const auto it = metadata.find(grpc::string_ref(key, std::strlen(key)));
  if (it == metadata.end()) return std::nullopt;
  return it->second;
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GRPC_COMMON_METADATA_KEYS_H_
