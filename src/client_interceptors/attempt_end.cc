#include "src/client_interceptors/attempt_end.h"

namespace resilience {

LocalEnd ClassifyAttemptEnd(const AttemptEnd& end) {
  const LocalEnd deadline_end =
      end.per_attempt ? LocalEnd::kPerAttemptTimeout : LocalEnd::kCallDeadline;
  if (end.code == grpc::StatusCode::CANCELLED) {
    if (end.timer_fired) return deadline_end;
    return end.cancelled_here ? LocalEnd::kCancelledByCaller : LocalEnd::kNone;
  }
  if (end.code != grpc::StatusCode::DEADLINE_EXCEEDED ||
      end.deadline == absl::InfiniteFuture()) {
    return LocalEnd::kNone;
  }
  if (end.deadline <= end.sent_at) return LocalEnd::kDeadlineBeforeStart;
  // A server that answered DEADLINE_EXCEEDED well before our deadline is
  // just a server answer.
  if (end.ended_at < end.deadline - kDeadlineSlack) return LocalEnd::kNone;
  return deadline_end;
}

grpc::Status OwnDeadlineStatus(const CallDeadlines& deadlines, LocalEnd local, int attempt,
                               int attempts) {
  if (local == LocalEnd::kPerAttemptTimeout) {
    return PerAttemptTimeoutStatus(deadlines.method, deadlines.attempt_limit, attempt,
                                   deadlines.max_attempts);
  }
  return CallDeadlineStatus(deadlines.method, deadlines.source, deadlines.call_limit, attempts);
}

}  // namespace resilience
