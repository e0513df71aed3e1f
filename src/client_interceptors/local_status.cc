#include "src/client_interceptors/local_status.h"

#include "absl/strings/str_cat.h"
#include "src/grpc_common/status_conversion.h"

namespace resilience {
namespace {

std::string Attempts(int n) { return absl::StrCat(n, n == 1 ? " attempt" : " attempts"); }

}  // namespace

grpc::Status PerAttemptTimeoutStatus(absl::string_view method, absl::Duration limit,
                                     int attempt, int max_attempts) {
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      absl::StrCat(method, ": attempt ", attempt, " of ", max_attempts,
                                   " exceeded its per-attempt timeout of ",
                                   absl::FormatDuration(limit)));
}

grpc::Status CallDeadlineStatus(absl::string_view method, DeadlineSource source,
                                absl::Duration limit, int attempts) {
  std::string message = absl::StrCat(
      method, ": deadline exceeded: ",
      source == DeadlineSource::kCaller
          ? std::string("the caller's deadline ran out")
          : absl::StrCat("the policy's timeout of ", absl::FormatDuration(limit), " ran out"));
  if (attempts > 0) absl::StrAppend(&message, " after ", Attempts(attempts));
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, std::move(message));
}

grpc::Status NotRetriedStatus(absl::string_view method, int attempts, absl::string_view reason,
                              const grpc::Status& last) {
  return grpc::Status(last.error_code(),
                      absl::StrCat(method, ": not retried after ", Attempts(attempts), ": ",
                                   reason, "; last attempt: ", FormatStatus(last)),
                      last.error_details());
}

grpc::Status BreakerRejectionStatus(absl::string_view method, absl::string_view breaker_kind,
                                    RejectReason reason) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      absl::StrCat(method, ": rejected locally by the circuit breaker (",
                                   breaker_kind, ": ", RejectReasonName(reason), ")"));
}

grpc::Status CancelledStatus(absl::string_view method, absl::string_view when) {
  return grpc::Status(grpc::StatusCode::CANCELLED,
                      absl::StrCat(method, ": cancelled by the caller", when));
}

}  // namespace resilience
