// File: src/client_interceptors/attempt_end.h
//
// How an attempt of a call ended, when this side decided it: classified in
// one place for both kinds of call (RetriedUnaryCall's attempts and
// SingleAttemptCall's one attempt), and the status the application gets
// for a deadline of ours, written in one place.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_END_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_END_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "src/client_interceptors/local_status.h"
#include "src/policy/method_policy.h"

namespace resilience {

// What is known when an attempt has its status. Times are wall-clock
// (Clock::WallNow()), the scale of gRPC deadlines.
struct AttemptEnd {
  grpc::StatusCode code = grpc::StatusCode::OK;
  // This side cancelled it: the caller cancelled the call (PRE_SEND_CANCEL),
  // or the call cancelled a losing attempt.
  bool cancelled_here = false;
  // A timer of ours cancelled it (a deadline gRPC could not be given,
  // AttemptTimeout): then CANCELLED means that deadline.
  bool timer_fired = false;
  // The deadline that applies (or the timer that fired) is the per-attempt
  // timeout, not the call's deadline.
  bool per_attempt = false;
  absl::Time deadline = absl::InfiniteFuture();  // the attempt's deadline, if any
  absl::Time sent_at;
  absl::Time ended_at;
};

// ClassifyAttemptEnd()
//
// How the attempt ended locally (LocalEnd::kNone: its status is the
// server's or the transport's):
//   - CANCELLED: our timer's deadline if it fired, else a cancellation of
//     ours (kCancelledByCaller, neutral to a breaker) if we cancelled it,
//     else the server's answer;
//   - DEADLINE_EXCEEDED with a deadline: kDeadlineBeforeStart when the
//     deadline had passed when it was sent, the deadline (per-attempt or
//     the call's) when it ended within kDeadlineSlack of it; one well
//     before is a server's answer.
LocalEnd ClassifyAttemptEnd(const AttemptEnd& end);

// Whether a DEADLINE_EXCEEDED end is one of our deadlines (the retry
// deciders' `deadline_passed`).
inline bool DeadlinePassed(const AttemptEnd& end, LocalEnd local) {
  return end.code == grpc::StatusCode::DEADLINE_EXCEEDED &&
         (local == LocalEnd::kPerAttemptTimeout || local == LocalEnd::kCallDeadline ||
          local == LocalEnd::kDeadlineBeforeStart);
}

// The deadlines a call's statuses name.
struct CallDeadlines {
  absl::string_view method;
  DeadlineSource source = DeadlineSource::kCaller;  // of the call's deadline
  absl::Duration call_limit = absl::ZeroDuration();  // the policy's `timeout`
  absl::Duration attempt_limit = absl::ZeroDuration();  // the per-attempt timeout
  int max_attempts = 1;
};

// OwnDeadlineStatus()
//
// DEADLINE_EXCEEDED in the chain's style (local_status.h) for `local`
// (kPerAttemptTimeout: attempt `attempt` of max_attempts; otherwise the
// call's deadline, "after <attempts> attempt(s)" when `attempts` > 0).
grpc::Status OwnDeadlineStatus(const CallDeadlines& deadlines, LocalEnd local, int attempt,
                               int attempts);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_END_H_
