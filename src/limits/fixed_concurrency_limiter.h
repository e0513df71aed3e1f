// File: src/limits/fixed_concurrency_limiter.h
//
// A ConcurrencyLimiter with a fixed limit (seed 003's service_throttle,
// Hystrix's semaphore isolation, resilience4j's Bulkhead with no wait).

#ifndef GRPC_RESILIENCE_SRC_LIMITS_FIXED_CONCURRENCY_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_FIXED_CONCURRENCY_LIMITER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/limits/concurrency_limiter.h"

namespace resilience {

// FixedConcurrencyLimiter
//
// At most `max_concurrency` slots. TryAcquire() is one compare-and-swap loop
// on one atomic counter, so the count never exceeds the limit, not even
// briefly; Release() is one atomic decrement. This class is thread-safe.
class FixedConcurrencyLimiter final : public ConcurrencyLimiter {
 public:
  // Validate()
  //
  // OK when Create() would accept `max_concurrency` (>= 1); otherwise
  // InvalidArgument naming the field and the value:
  // "max_concurrency: must be >= 1, got 0".
  static absl::Status Validate(int64_t max_concurrency);

  // Create()
  //
  // A limiter for a `max_concurrency` Validate() accepts; its error
  // otherwise.
  static absl::StatusOr<std::unique_ptr<FixedConcurrencyLimiter>> Create(int64_t max_concurrency);

  // Builds a limiter without validation, for callers that validated the
  // limit already (the policy loader does, through Validate()). A limit
  // below 1 admits nothing.
  explicit FixedConcurrencyLimiter(int64_t max_concurrency) : limit_(max_concurrency) {}

  bool TryAcquire() override {
    int64_t current = in_flight_.load(std::memory_order_relaxed);
    do {
      if (current >= limit_.load(std::memory_order_relaxed)) return false;
    } while (!in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
    return true;
  }

  void Release(Outcome /*outcome*/, absl::Duration /*latency*/) override {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  }

  int64_t in_flight() const override { return in_flight_.load(std::memory_order_acquire); }
  int64_t limit() const override { return limit_.load(std::memory_order_relaxed); }
  bool Resize(int64_t limit) override {
    limit_.store(limit, std::memory_order_relaxed);
    return true;
  }

 private:
  // Changed only by Resize(); relaxed: a call admitted against the old
  // limit just before a resize is one of the calls in flight it keeps.
  std::atomic<int64_t> limit_;
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_FIXED_CONCURRENCY_LIMITER_H_
