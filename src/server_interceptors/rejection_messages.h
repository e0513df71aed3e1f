// File: src/server_interceptors/rejection_messages.h
//
// The status messages of a method's rate-limit rejections, formatted once
// when the method's state is built rather than on every rejected call: a
// server sheds load by rejecting, so a rejection should cost as little as
// possible (docs/server-rejection.md, "What a rejection costs the server").

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_

#include <array>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "grpc_resilience/criticality_level.h"
#include "src/limits/criticality_shares.h"

namespace resilience {

// RejectionMessages
//
// For one method under one scope's limits, per criticality level:
//   rate:        "/cache.v1.CacheService/Get: rate limit 5/s reached"
//   global rate: "/cache.v1.CacheService/Get: global rate limit 5/s reached"
// each followed, for a level with less than the whole of the limits, by
// ForLevel(): " for SHEDDABLE calls (share 0.5)"; and, for limits that
// cannot be used, "/cache.v1.CacheService/Get: throttle not usable: <why>".
// Immutable once built; thread-safe to read.
class RejectionMessages {
 public:
  RejectionMessages() = default;
  // `rate_per_second` and `global_rate_per_second`: the limits' rates
  // (nullopt: no such limit, no message); `unusable`: why the limits cannot
  // be used ("" if they can).
  RejectionMessages(absl::string_view method, const CriticalityShares& shares,
                    std::optional<double> rate_per_second,
                    std::optional<double> global_rate_per_second, absl::string_view unusable);

  const std::string& rate(Criticality level) const { return rate_[CriticalityIndex(level)]; }
  const std::string& global_rate(Criticality level) const {
    return global_rate_[CriticalityIndex(level)];
  }
  const std::string& unusable() const { return unusable_; }

  // " for SHEDDABLE calls (share 0.5)" when `level` has less than the whole
  // of the limits under `shares`, else "".
  static std::string ForLevel(const CriticalityShares& shares, Criticality level);

 private:
  std::array<std::string, kCriticalityLevels> rate_;
  std::array<std::string, kCriticalityLevels> global_rate_;
  std::string unusable_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_
