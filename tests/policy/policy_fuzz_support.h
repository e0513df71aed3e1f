// File: tests/policy/policy_fuzz_support.h
//
// What the policy fuzzer's parts share: how it aborts (naming the entry),
// the simulated clocks' limit, and the draws that drive each decision from
// the input's hash.

#ifndef GRPC_RESILIENCE_TESTS_POLICY_POLICY_FUZZ_SUPPORT_H_
#define GRPC_RESILIENCE_TESTS_POLICY_POLICY_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/policy/method_policy.h"

namespace resilience {

[[noreturn]] inline void Die(const std::string& source, const char* what,
                      const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "policy_fuzzer: %s: %s %s\n", source.c_str(), what,
               status.ok() ? "" : status.ToString().c_str());
  std::abort();
}

// The simulated clocks start a day after the epoch; random steps stop at
// 200 years after it, so that one more step as long as the largest token
// bucket refill (1e9 s, about 32 years) still fits in int64 nanoseconds
// (about 292 years).
inline const absl::Time kLatest = absl::UnixEpoch() + absl::Hours(24 * 365 * 200);

// Moves `clock` by `d` unless that would pass kLatest.
inline void Advance(SimulatedClock& clock, absl::Duration d) {
  if (d <= absl::ZeroDuration() || clock.Now() + d > kLatest) return;
  clock.AdvanceTime(d);
}

// Draws for the decisions, fixed by the input.
class Draws {
 public:
  explicit Draws(uint64_t seed) : random_(seed) {}
  uint64_t Next(uint64_t n) {
    return static_cast<uint64_t>(random_.NextUniform() * static_cast<double>(n)) % n;
  }

  // A clock step: mostly small, sometimes one of `periods` (the policy's
  // own durations) give or take a nanosecond, sometimes years.
  absl::Duration Step(const std::vector<absl::Duration>& periods) {
    switch (Next(8)) {
      case 0:
        return absl::ZeroDuration();
      case 1:
        return absl::Nanoseconds(1);
      case 2:
        return absl::Milliseconds(static_cast<int64_t>(Next(1000)));
      case 3:
      case 4: {
        if (periods.empty()) return absl::Seconds(1);
        const absl::Duration d = periods[Next(periods.size())];
        return d + absl::Nanoseconds(static_cast<int64_t>(Next(3)) - 1);
      }
      case 5:
        return absl::Hours(1) * static_cast<int64_t>(Next(48));
      case 6:
        return absl::Hours(24 * 365) * static_cast<int64_t>(1 + Next(10));
      default:
        return absl::Microseconds(static_cast<int64_t>(Next(1000000)));
    }
  }

 private:
  SplitMixRandom random_;
};

inline uint64_t Fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ULL;
  return h;
}

// The server's runtime objects built from a loaded policy and driven by the
// draws (policy_fuzz_server.cc): the throttle's token bucket and concurrency
// limiter, its adaptive limit, its global rate limiter, its per-caller
// limits; the client's bulkhead.
void ExerciseThrottle(const MethodPolicy& p, Draws& draws);
void ExerciseGlobalThrottle(const MethodPolicy& p, Draws& draws);
// throttle.perCaller, throttle.criticalityShares and criticality; the
// client's bulkhead.
void ExercisePerCaller(const MethodPolicy& p, Draws& draws);
void ExerciseBulkhead(const MethodPolicy& p, Draws& draws);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_POLICY_POLICY_FUZZ_SUPPORT_H_
