#include "examples/cache_service/status_text.h"

#include "absl/strings/str_cat.h"

namespace cache_service {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return status.ok() ? grpc::Status::OK
                     : grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                                    std::string(status.message()));
}

std::string StatusCodeName(grpc::StatusCode code) {
  const std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? absl::StrCat("CODE(", static_cast<int>(code), ")") : name;
}

std::string FormatStatus(const grpc::Status& status) {
  return status.error_message().empty()
             ? StatusCodeName(status.error_code())
             : absl::StrCat(StatusCodeName(status.error_code()), ": ", status.error_message());
}

}  // namespace cache_service
