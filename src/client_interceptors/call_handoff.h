// File: src/client_interceptors/call_handoff.h
//
// What the factories of one call's interceptor chain tell each other. gRPC
// 1.51 creates a call's interceptors synchronously, on the calling thread,
// in chain order (retry, timeout, breaker), so a thread-local set by one
// factory and taken by a later one in the same chain reaches exactly that
// call. The breaker factory, last in the chain, always clears both.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_HANDOFF_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_HANDOFF_H_

#include <atomic>

namespace resilience::internal {

// Set by the timeout interceptor of a call when its timer fired and it
// cancelled the call, read by the breaker at POST_RECV_STATUS (which
// runs before the timeout interceptor turns CANCELLED into
// DEADLINE_EXCEEDED), so that the breaker records a failure, not a
// cancellation by the caller.
struct TimeoutFlag {
  std::atomic<bool> fired{false};
  // What fired: the per-attempt timeout rather than the policy's `timeout`
  // (the call's deadline). Set before `fired`.
  std::atomic<bool> per_attempt{false};
};

// What the retry interceptor tells the chain of one of its attempts.
struct AttemptInfo {
  // The attempt's deadline is its per-attempt timeout, earlier than the
  // call's own deadline: when it passes, the backend was too slow.
  bool per_attempt_deadline = false;
};

// Non-null while the retry interceptor creates one of its attempts: the
// chain being built is an attempt, not an application call. The breaker
// factory copies what it needs and clears it.
const AttemptInfo* CreatingAttempt();
void SetCreatingAttempt(const AttemptInfo* attempt);

// Set by the retry factory for every call it sees: true when it took the
// call (a unary call it will re-issue as attempts), so that the timeout and
// breaker factories leave that call alone (they see its attempts instead).
// The breaker factory clears it.
bool RetryTookCall();
void SetRetryTookCall(bool took);

// The timeout factory leaves the call's flag here; the breaker factory takes
// it (and clears it). The flag belongs to the call's TimeoutInterceptor,
// which lives as long as the breaker interceptor of the same call.
void HandOffTimeoutFlag(TimeoutFlag* flag);
TimeoutFlag* TakeTimeoutFlag();

}  // namespace resilience::internal

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_HANDOFF_H_
