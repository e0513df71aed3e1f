// File: src/client_interceptors/call_handoff.h
//
// What the timeout factory of a call hands the breaker factory of the same
// call. gRPC 1.51 creates a call's interceptors synchronously, on the
// calling thread, in chain order (retry, timeout, breaker), so a
// thread-local set by one factory and taken by a later one in the same chain
// reaches exactly that call. The breaker factory, last in the chain, always
// takes it. Which interceptors a call gets is call_plan.h's.

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

// The timeout factory leaves the call's flag here; the breaker factory takes
// it (and clears it). The flag belongs to the call's TimeoutInterceptor,
// which lives as long as the breaker interceptor of the same call.
void HandOffTimeoutFlag(TimeoutFlag* flag);
TimeoutFlag* TakeTimeoutFlag();

}  // namespace resilience::internal

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_HANDOFF_H_
