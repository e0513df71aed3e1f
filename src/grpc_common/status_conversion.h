// File: src/grpc_common/status_conversion.h
//
// grpc-resilience uses absl::Status inside the library and grpc::Status only at
// the gRPC boundary. gRPC 1.51 has no public converter; the numeric codes of the
// two are the same (absl/status/status.h says so for each code), so conversion
// is a cast plus the message.

#ifndef GRPC_RESILIENCE_SRC_GRPC_COMMON_STATUS_CONVERSION_H_
#define GRPC_RESILIENCE_SRC_GRPC_COMMON_STATUS_CONVERSION_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace resilience {

// ToGrpcStatus()
//
// Same code, same message. Payloads are dropped.
grpc::Status ToGrpcStatus(const absl::Status& status);

// ToAbslStatus()
//
// Same code, same message. Error details are dropped.
absl::Status ToAbslStatus(const grpc::Status& status);

// StatusCodeName()
//
// The canonical upper-case name of a gRPC code ("UNAVAILABLE"), or
// "CODE(<n>)" for a number outside the known range.
std::string StatusCodeName(grpc::StatusCode code);

// FormatStatus()
//
// "NAME: message", or just "NAME" when the message is empty; this is how the
// command-line tools print a failed call.
std::string FormatStatus(const grpc::Status& status);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GRPC_COMMON_STATUS_CONVERSION_H_
