// File: src/limits/concurrency_limiter.h
//
// The interface of server-side concurrency limits: fixed
// (FixedConcurrencyLimiter) or adaptive (GradientConcurrencyLimiter,
// AimdConcurrencyLimiter, over AdaptiveConcurrencyLimiter; in the family of
// Envoy's adaptive_concurrency, Netflix's concurrency-limits and bRPC's
// "auto" limiter, docs/adaptive-concurrency.md). A call asks for a slot
// before it runs and gives it back, with its outcome and latency, when it is
// completely done.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_CONCURRENCY_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_CONCURRENCY_LIMITER_H_

#include <cstdint>

#include "absl/time/time.h"
#include "src/breaker/outcome.h"

namespace resilience {

// ConcurrencyLimiter
//
// Contract: every TryAcquire() that returned true is followed by exactly one
// Release(), after the call's work is over (in grpc-resilience: in the server
// interceptor's destructor, which runs after the handler has returned and the
// call has closed). A TryAcquire() that returned false needs no Release().
// All implementations must be thread-safe and lock-free or nearly so.
class ConcurrencyLimiter {
 public:
  virtual ~ConcurrencyLimiter() = default;

  // TryAcquire()
  //
  // True and a slot taken, or false when the limit is reached.
  virtual bool TryAcquire() = 0;

  // Release()
  //
  // Gives the slot back. `outcome` and `latency` are what an adaptive limiter
  // learns from; a fixed limiter ignores them.
  // Outcome::kNeutral (a call its client cancelled) is no latency sample
  // for an adaptive limiter, whatever the latency: a cancelled call's
  // latency is only how long it ran before its client went away. (It is
  // still a call that went unanswered: a baseline measurement that sees
  // nothing else gives up, GradientConcurrencyLimiter.)
  virtual void Release(Outcome outcome, absl::Duration latency) = 0;

  // ReleaseUnused()
  //
  // Gives back the slot of a call that never ran (refused by another limit
  // after it took the slot): nothing to learn. By default
  // Release(kNeutral, 0).
  virtual void ReleaseUnused() { Release(Outcome::kNeutral, absl::ZeroDuration()); }

  // ReleaseExpired()
  //
  // Gives back the slot of a call whose deadline passed before it was
  // answered (a timeout; its answer, if any, reached nobody). `ran` is how
  // long it ran, a lower bound of its latency: an adaptive limiter counts a
  // drop and decides whether the bound is a sample (see
  // AdaptiveConcurrencyLimiter). By default: Release(kFailure, ran).
  virtual void ReleaseExpired(absl::Duration ran) { Release(Outcome::kFailure, ran); }

  // Slots taken now.
  virtual int64_t in_flight() const = 0;
  // The current limit.
  virtual int64_t limit() const = 0;

  // Resize()
  //
  // Sets a fixed limit to `limit` (a policy update), keeping the calls in
  // flight: they release their slots here as usual, and while more are in
  // flight than the new limit, new calls wait for enough of them to end.
  // Returns false, changing nothing, for a limiter whose limit is not fixed
  // (an adaptive one moves on its own).
  virtual bool Resize(int64_t /*limit*/) { return false; }
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_CONCURRENCY_LIMITER_H_
