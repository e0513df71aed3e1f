// File: src/routing/load_report_wire.h
//
// The protobuf wire types and OrcaLoadReport's field numbers
// (xds/data/orca/v3/orca_load_report.proto) that load_report.cc writes and
// load_report_parser.cc reads, in one place.

#ifndef GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_WIRE_H_
#define GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_WIRE_H_

#include <cstdint>

namespace resilience {
namespace load_report_wire {

// Wire types (protobuf encoding).
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kStartGroup = 3;
constexpr uint32_t kEndGroup = 4;
constexpr uint32_t kFixed32 = 5;

// OrcaLoadReport's field numbers (xds/data/orca/v3/orca_load_report.proto).
constexpr uint32_t kCpuUtilization = 1;
constexpr uint32_t kMemUtilization = 2;
constexpr uint32_t kRequestCost = 4;
constexpr uint32_t kUtilization = 5;
constexpr uint32_t kRpsFractional = 6;
constexpr uint32_t kEps = 7;
constexpr uint32_t kNamedMetrics = 8;
constexpr uint32_t kApplicationUtilization = 9;
// A map entry's.
constexpr uint32_t kEntryKey = 1;
constexpr uint32_t kEntryValue = 2;

}  // namespace load_report_wire
}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ROUTING_LOAD_REPORT_WIRE_H_
