// File: src/grpc_common/reported_load.h
//
// The load a server reported in a call's trailers (ORCA, gRFC A51), as the
// one figure a client's endpoint picker weighs the server by.

#ifndef GRPC_RESILIENCE_SRC_GRPC_COMMON_REPORTED_LOAD_H_
#define GRPC_RESILIENCE_SRC_GRPC_COMMON_REPORTED_LOAD_H_

#include <map>
#include <optional>

#include "grpcpp/support/string_ref.h"

namespace resilience {

// ReportedUtilization()
//
// LoadReport::Utilization() (src/routing/load_report.h: application
// utilization, else the largest named utilization, else CPU; in [0, 1]) of
// the report in `trailers` (ClientContext::GetServerTrailingMetadata(): gRPC
// has already decoded the binary value): orca-load-bin, which a
// server of ours writes because a gRPC 1.51 C++ client never shows the
// application ORCA's own endpoint-load-metrics-bin (metadata_keys.h); else
// endpoint-load-metrics-bin, for a client library or proxy that does show
// it. nullopt when there is no such trailer or its value does not
// parse (a server of another kind, a corrupted value): no figure rather than
// a wrong one. An empty value is an empty report: 0. The first value counts
// if the trailer is repeated. Never throws (but for std::bad_alloc) and
// never reads outside the value.
std::optional<double> ReportedUtilization(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GRPC_COMMON_REPORTED_LOAD_H_
