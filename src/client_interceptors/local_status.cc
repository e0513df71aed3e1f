#include "src/client_interceptors/local_status.h"

#include <string>

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

grpc::Status BulkheadRejectionStatus(absl::string_view method, const Bulkhead::Options& options,
                                     Bulkhead::Entry entry, absl::Duration waited,
                                     bool by_deadline) {
  std::string why;
  if (entry == Bulkhead::Entry::kQueueFull) {
    why = options.max_queue == 0
              ? absl::StrCat("maxConcurrency ", options.max_concurrency, " in use and maxQueue 0")
              : absl::StrCat("maxConcurrency ", options.max_concurrency,
                             " in use and the queue of ", options.max_queue, " full");
  } else if (entry == Bulkhead::Entry::kNoTimeToWait && options.max_wait == absl::ZeroDuration()) {
    why = absl::StrCat("maxConcurrency ", options.max_concurrency,
                       " in use and maxWait 0s");
  } else if (!by_deadline) {
    why = absl::StrCat("no slot within ", absl::FormatDuration(options.max_wait), " (maxWait)");
  } else {
    why = absl::StrCat("no slot before the call's deadline, after waiting ",
                       absl::FormatDuration(waited));
  }
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      absl::StrCat(method, ": rejected locally by the bulkhead (", why, ")"));
}

grpc::Status CancelledStatus(absl::string_view method, absl::string_view when) {
  return grpc::Status(grpc::StatusCode::CANCELLED,
                      absl::StrCat(method, ": cancelled by the caller", when));
}

}  // namespace resilience
