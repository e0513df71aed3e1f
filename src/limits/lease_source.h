// File: src/limits/lease_source.h
//
// Where a GlobalRateLimiter gets the tokens it admits calls with.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_LEASE_SOURCE_H_
#define GRPC_RESILIENCE_SRC_LIMITS_LEASE_SOURCE_H_

namespace resilience {

// LeaseSource
//
// The other half of a GlobalRateLimiter: something, usually on a thread of
// its own, that takes batches of tokens ("leases") from the store the fleet
// shares and hands them to the limiter (GlobalRateLimiter::OnLease(), or
// OnFailure() when the store cannot be reached). The limiter only ever calls
// Wake(), from the call path.
class LeaseSource {
 public:
  virtual ~LeaseSource() = default;

  // Wake()
  //
  // The limiter is running low on leased tokens: ask
  // GlobalRateLimiter::LeaseWanted() soon. Called on the call path: must
  // not block, and is called again and again while the limiter is low.
  virtual void Wake() = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_LEASE_SOURCE_H_
