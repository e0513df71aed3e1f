// File: src/server_interceptors/rejection_messages.h
//
// The status messages of a method's rate-limit rejections, formatted once
// when the method's state is built rather than on every rejected call: a
// server sheds load by rejecting, so a rejection should cost as little as
// possible (docs/server-rejection.md, "What a rejection costs the server").

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_

#include <array>
#include <cstdint>
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
// ForLevel(): " for SHEDDABLE calls (share 0.5)"; for a fixed concurrency
// limit, Concurrency()'s message for the limit it was built with; and, for
// limits that cannot be used,
// "/cache.v1.CacheService/Get: throttle not usable: <why>".
// Immutable once built; thread-safe to read.
class RejectionMessages {
 public:
  RejectionMessages() = default;
  // `rate_per_second` and `global_rate_per_second`: the limits' rates
  // (nullopt: no such limit, no message); `fixed_concurrency_limit`: a fixed
  // concurrency limit's size (nullopt: none, or an adaptive one, whose
  // messages are formatted per rejection); `unusable`: why the limits cannot
  // be used ("" if they can). `retried`: the messages of retried attempts
  // judged by the retry shares (RetryShedding): " for retried CRITICAL calls
  // (share 0.5)".
  RejectionMessages(absl::string_view method, const CriticalityShares& shares,
                    std::optional<double> rate_per_second,
                    std::optional<double> global_rate_per_second,
                    std::optional<int64_t> fixed_concurrency_limit, absl::string_view unusable,
                    bool retried = false);

  // The message formatted for a fixed concurrency limit of `limit`, if it
  // was built for that limit (a reload resizes a fixed limiter in place);
  // else null: format it with Concurrency().
  const std::string* concurrency(int64_t limit, Criticality level) const {
    return limit == concurrency_limit_ ? &concurrency_[CriticalityIndex(level)] : nullptr;
  }

  const std::string& rate(Criticality level) const { return rate_[CriticalityIndex(level)]; }
  const std::string& global_rate(Criticality level) const {
    return global_rate_[CriticalityIndex(level)];
  }
  const std::string& unusable() const { return unusable_; }

  // " for SHEDDABLE calls (share 0.5)" when `level` has less than the whole
  // of the limits under `shares`, else ""; " for retried SHEDDABLE calls
  // (share 0.25)" for `retried` attempts.
  static std::string ForLevel(const CriticalityShares& shares, Criticality level,
                              bool retried = false);

  // "/cache.v1.CacheService/Get: concurrency limit 4 reached", "adaptive
  // concurrency limit" for an `adaptive` one, followed, when `cap` (the
  // slots `level` may use) is below `limit`, by
  // " for SHEDDABLE calls (2 of 4 slots)" (" for retried SHEDDABLE calls"
  // for `retried` attempts).
  static std::string Concurrency(absl::string_view method, bool adaptive, int64_t limit,
                                 int64_t cap, Criticality level, bool retried = false);

 private:
  std::array<std::string, kCriticalityLevels> rate_;
  std::array<std::string, kCriticalityLevels> global_rate_;
  std::string unusable_;
  int64_t concurrency_limit_ = -1;  // -1: none formatted
  std::array<std::string, kCriticalityLevels> concurrency_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTION_MESSAGES_H_
