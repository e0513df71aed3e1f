#include "src/grpc_common/status_conversion.h"

#include "absl/strings/str_cat.h"

namespace resilience {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status ToAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::string StatusCodeName(grpc::StatusCode code) {
  const int n = static_cast<int>(code);
  if (n < 0 || n > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return absl::StrCat("CODE(", n, ")");
  }
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(n));
}

std::string FormatStatus(const grpc::Status& status) {
  std::string name = StatusCodeName(status.error_code());
  if (status.error_message().empty()) return name;
  return absl::StrCat(name, ": ", status.error_message());
}

}  // namespace resilience
