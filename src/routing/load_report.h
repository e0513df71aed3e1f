// File: src/routing/load_report.h
//
// A backend's load as gRPC's ORCA (gRFC A51) carries it in a call's
// `endpoint-load-metrics-bin` trailer: a serialized
// xds.data.orca.v3.OrcaLoadReport, written and read here by hand (protobuf
// wire format, no generated code, no gRPC), so that a server built with the
// library can send it on Debian's gRPC 1.51 (whose libgrpc++ does not export
// the recorder's interceptor, docs/routing.md "Load reports") and a client can
// read it without linking a proto of xDS. A server of ours sends it under
// kReadableLoadReportKey, which a gRPC 1.51 client can read, rather than
// ORCA's kLoadReportKey (src/grpc_common/metadata_keys.h).

#ifndef GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_H_
#define GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace resilience {

// LoadReport
//
// The fields of xds.data.orca.v3.OrcaLoadReport, with its field numbers:
//   cpu_utilization = 1, mem_utilization = 2, request_cost = 4 (map),
//   utilization = 5 (map), rps_fractional = 6, eps = 7, named_metrics = 8
//   (map), application_utilization = 9.
// The deprecated `rps` (3, uint64) is neither written nor kept (skipped as an
// unknown field). As in proto3, a scalar that is 0 is "not set": it is not
// written, and a report without it reads back as 0.
struct LoadReport {
  // CPU in use over what the backend may use: [0, 1] usually, may exceed 1
  // when the backend uses more than its share.
  double cpu_utilization = 0;
  double mem_utilization = 0;
  // Whatever the application takes as its utilization (the figure the
  // picker prefers), as cpu_utilization.
  double application_utilization = 0;
  // Queries per second (fractional) and errors per second.
  double rps_fractional = 0;
  double eps = 0;
  // Named costs, utilizations in [0, 1], and any other metrics.
  std::map<std::string, double> request_cost;
  std::map<std::string, double> utilization;
  std::map<std::string, double> named_metrics;

  // Utilization()
  //
  // The one figure a client's endpoint picker weighs an endpoint by, in
  // [0, 1]:
  //   - application_utilization, when it is above 0 (as gRPC's weighted
  //     round robin, gRFC A58, prefers it);
  //   - else the largest value of the `utilization` map, when the map has
  //     a value that is a number;
  //   - else cpu_utilization.
  // The result is clamped to [0, 1] (a backend over its share is full; a
  // negative value is empty) and a NaN taken as 0: a malformed report must
  // not make an endpoint look better than an empty one, nor crash a sort.
  double Utilization() const;
};

bool operator==(const LoadReport& a, const LoadReport& b);
inline bool operator!=(const LoadReport& a, const LoadReport& b) { return !(a == b); }

// SerializeLoadReport()
//
// `report` in protobuf wire format: each scalar that is not 0 (bitwise: a
// -0.0 is written, as protobuf writes it) as a fixed64 double; each map
// entry as a length-delimited field holding key = 1 (string) and value = 2
// (double), in key order. Fields in number order. One allocation (the
// result, sized exactly before it is written). Map keys longer than
// 2^31 bytes are not supported (never sent by anything sane).
std::string SerializeLoadReport(const LoadReport& report);

// AppendLoadReport()
//
// The same bytes appended to `*out` (which may already hold data), so a
// caller may reuse one buffer.
void AppendLoadReport(const LoadReport& report, std::string* out);

// ParseLoadReport()
//
// The report in `bytes` (a serialized OrcaLoadReport from any sender).
// Unknown fields of any wire type but groups are skipped; a repeated scalar
// keeps its last value, a repeated map key its last entry, as protobuf does;
// a map entry without a key has key "", without a value 0. Errors
// (InvalidArgument) name what and where, by byte offset:
//   "load report: field 5 (utilization) at byte 12: length 30 runs past the
//    end (18 bytes left)",
//   "load report: field 1 (cpu_utilization) at byte 0: wire type 0, expected
//    1 (64-bit)",
//   "load report: byte 9: truncated varint", "... field 0 ...", group wire
//   types 3 and 4 ("unsupported").
// Never reads outside `bytes`; linear in its size.
absl::StatusOr<LoadReport> ParseLoadReport(absl::string_view bytes);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_H_
