// File: src/server_interceptors/load_report_trailer.h
//
// What a throttled server reports of its load in each unary answer's
// `orca-load-bin` trailer: a serialized ORCA OrcaLoadReport (gRFC
// A51) under a key a gRPC 1.51 client can read (throttle.loadReport,
// docs/routing.md "Load reports").

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_LOAD_REPORT_TRAILER_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_LOAD_REPORT_TRAILER_H_

#include <map>
#include <string>

#include "absl/time/time.h"
#include "src/server_interceptors/server_method_state.h"

namespace resilience {

// The name of the concurrency figure in the report's `utilization` map.
inline constexpr char kConcurrencyUtilization[] = "concurrency";

// ScopeLoadReport()
//
// The serialized LoadReport (src/routing/load_report.h) of the scope
// `limits` at `now` (the throttle's clock):
//   - utilization {"concurrency": calls in flight / the concurrency limit
//     now} when the scope has one (fixed or adaptive), read after the
//     answered call gave its slot back: what the next call finds;
//   - cpu_utilization: the CPU gate's figure (CpuUtilisationMeter) when the
//     scope has throttle.cpu, else not set;
//   - application_utilization: the larger of the two (a single figure a
//     client weighs the endpoint by); not set when neither is there;
//   - eps: the scope's throttle rejections per second (`rejection_rate`).
// The figures may exceed 1 (more in flight than a limit lowered by a policy
// update); a client clamps (LoadReport::Utilization()). About 0.1k
// instructions and one allocation (the result); the report's map is a
// thread's own, reused.
std::string ScopeLoadReport(ScopeLimits& limits, absl::Time now);

// AddLoadReport()
//
// `report` (ScopeLoadReport()) into a call's trailers, under
// orca-load-bin only: a gRPC 1.51 C++ client never shows the
// application ORCA's own key, endpoint-load-metrics-bin
// (src/grpc_common/metadata_keys.h), and a second trailer would cost as much
// again (docs/routing.md, "What it costs").
void AddLoadReport(std::multimap<std::string, std::string>& trailers, std::string report);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_LOAD_REPORT_TRAILER_H_
