// File: src/limits/criticality_shares.h
//
// How a server limit sheds lower criticality first: each level is admitted
// only while the limit is used below the level's share of it
// (docs/criticality.md).

#ifndef GRPC_RESILIENCE_SRC_LIMITS_CRITICALITY_SHARES_H_
#define GRPC_RESILIENCE_SRC_LIMITS_CRITICALITY_SHARES_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "grpc_resilience/criticality_level.h"
#include "src/limits/concurrency_limiter.h"

namespace resilience {

// CriticalityShares
//
// The share of a limit up to which each level is admitted, in [0, 1],
// never larger for a less critical level. Defaults: CRITICAL_PLUS and
// CRITICAL 1 (the whole limit, as without criticality), SHEDDABLE_PLUS
// 0.75, SHEDDABLE 0.5. A call of CRITICAL (every call without a
// criticality) is therefore judged exactly as before.
//
// How each kind of limit applies a share below 1:
//   - concurrency (fixed or adaptive): admitted while the slots taken are
//     below max(1, floor(share x limit)) (0 for a share of 0). The check
//     and the slot are two steps: calls racing past the check together may
//     take a slot each, so a level can exceed its cap by the number of its
//     calls admitted at the same instant, never the limit itself;
//   - rate (TokenBucket, and the local share of a fleet-wide limit): the
//     bucket as seen by the level holds share x burst tokens (at least
//     one): a less critical call finds it empty while the top of the bucket
//     is still kept for the more critical ones. With a burst below
//     1 / (1 - share) no whole token is reserved;
//   - fleet-wide (tokens leased from the store): admitted while more than
//     (1 - share) x the largest lease of leased tokens are left.
// This class is a value; copies are independent.
class CriticalityShares {
 public:
  static constexpr double kDefaultSheddablePlus = 0.75;
  static constexpr double kDefaultSheddable = 0.5;

  CriticalityShares() = default;

  // Validate()
  //
  // OK when every share is in [0, 1] and none is larger than a more
  // critical level's; InvalidArgument naming the level's field and the
  // value otherwise ("criticality_shares.sheddable: must be in [0, 1], got
  // 1.5"). The shares are given from CRITICAL_PLUS to SHEDDABLE.
  static absl::Status Validate(const std::array<double, kCriticalityLevels>& shares);

  // Shares Validate() accepted.
  explicit CriticalityShares(const std::array<double, kCriticalityLevels>& shares)
      : shares_(shares) {}

  double share(Criticality level) const { return shares_[CriticalityIndex(level)]; }
  const std::array<double, kCriticalityLevels>& shares() const { return shares_; }

  // ConcurrencyCap()
  //
  // The slots `level` may find taken at most for its call to be admitted
  // under `limit`: limit for a share of 1, 0 for 0, else
  // max(1, floor(share x limit)).
  int64_t ConcurrencyCap(int64_t limit, Criticality level) const;

  // TryAcquire()
  //
  // A slot of `limiter` for a call of `level`: as limiter.TryAcquire() for a
  // share of 1, and refused without asking it while limiter.in_flight() is
  // at ConcurrencyCap(limiter.limit(), level) or above.
  bool TryAcquire(ConcurrencyLimiter& limiter, Criticality level) const;

  // BucketCapacity()
  //
  // The capacity (burst x T, in nanoseconds) a token bucket of `capacity_ns`
  // and interval `interval_ns` has for a call of `level`: all of it for a
  // share of 1, 0 (never a token) for 0, else share x capacity, at least
  // one interval.
  int64_t BucketCapacity(int64_t capacity_ns, int64_t interval_ns, Criticality level) const;

  // LeaseReserve()
  //
  // The leased tokens a call of `level` must leave to the more critical:
  // ceil((1 - share) x max_lease), 0 for a share of 1.
  int64_t LeaseReserve(int64_t max_lease, Criticality level) const;

 private:
  std::array<double, kCriticalityLevels> shares_ = {1.0, 1.0, kDefaultSheddablePlus,
                                                    kDefaultSheddable};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_CRITICALITY_SHARES_H_
