// File: examples/cache_service/status_text.h
//
// The cache service's statuses as its tools print them, and its store's
// absl::Status as the gRPC status it answers. The numbers of the gRPC and
// the Abseil codes are the same (absl/status/status.h says so of each).

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STATUS_TEXT_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STATUS_TEXT_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace cache_service {

// The gRPC status of the same code and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// "UNAVAILABLE"; "CODE(<n>)" for a number no code has.
std::string StatusCodeName(grpc::StatusCode code);

// "NAME: message", or "NAME" without a message: a failed call as the tools
// print it.
std::string FormatStatus(const grpc::Status& status);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STATUS_TEXT_H_
