// File: src/client_interceptors/local_status.h
//
// The statuses the client chain makes up itself, when the outcome of a call
// was decided on this side (a timeout, the call's deadline, a retry that was
// not made, a cancellation). One style for all of them:
//
//   "<method>: <what happened>[; last attempt: <CODE>: <message>]"
//
// so that a log line alone says which method, which cause and, when a
// server answered, what it said. The breaker's own rejection too.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_STATUS_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_STATUS_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "src/breaker/breaker.h"
#include "src/limits/bulkhead.h"

namespace resilience {

// A DEADLINE_EXCEEDED that comes within this of our own deadline is that
// deadline (gRPC's timers and our clock read a little apart); one well
// before it is a server's answer.
inline constexpr absl::Duration kDeadlineSlack = absl::Milliseconds(5);

// Where a call's deadline came from.
enum class DeadlineSource {
  kCaller,  // the caller's ClientContext deadline
  kPolicy,  // the method policy's `timeout`, earlier than the caller's
};

// DEADLINE_EXCEEDED "<method>: attempt <n> of <max> exceeded its per-attempt
// timeout of <limit>".
grpc::Status PerAttemptTimeoutStatus(absl::string_view method, absl::Duration limit,
                                     int attempt, int max_attempts);

// DEADLINE_EXCEEDED "<method>: deadline exceeded: the caller's deadline ran
// out" or "...: the policy's timeout of <limit> ran out", with " after <n>
// attempt(s)" when `attempts` > 0.
grpc::Status CallDeadlineStatus(absl::string_view method, DeadlineSource source,
                                absl::Duration limit, int attempts);

// The last attempt's code, "<method>: not retried after <n> attempt(s):
// <reason>; last attempt: <CODE>: <message>".
grpc::Status NotRetriedStatus(absl::string_view method, int attempts, absl::string_view reason,
                              const grpc::Status& last);

// UNAVAILABLE "<method>: rejected locally by the circuit breaker (<kind>:
// <reason>)". UNAVAILABLE, because to a caller (and to standard clients'
// retry) the method is unavailable for now; the message says it was decided
// here. Cheap: one string built, no breaker state read.
grpc::Status BreakerRejectionStatus(absl::string_view method, absl::string_view breaker_kind,
                                    RejectReason reason);

// UNAVAILABLE "<method>: rejected locally by the bulkhead (<why>)", where
// <why> says which bound refused it: "maxConcurrency 2 in use and the queue
// of 4 full", "... and maxQueue 0", "no slot within 100ms (maxWait)" or "no
// slot before the call's deadline" (`by_deadline`: the deadline, not
// maxWait, bounded its wait). For a call that waited, `waited` is how long.
grpc::Status BulkheadRejectionStatus(absl::string_view method, const Bulkhead::Options& options,
                                     Bulkhead::Entry entry, absl::Duration waited,
                                     bool by_deadline);

// CANCELLED "<method>: cancelled by the caller<when>".
grpc::Status CancelledStatus(absl::string_view method, absl::string_view when);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_LOCAL_STATUS_H_
