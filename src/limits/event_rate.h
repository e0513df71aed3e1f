// File: src/limits/event_rate.h
//
// Events per second over about the last second, counted lock-free: the
// server throttle's rejection rate, which its load reports carry as `eps`
// (docs/routing.md, "Load reports").

#ifndef GRPC_RESILIENCE_SRC_LIMITS_EVENT_RATE_H_
#define GRPC_RESILIENCE_SRC_LIMITS_EVENT_RATE_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace resilience {

// EventRate
//
// Two slots of one window each (1 s by default), the current and the last:
// Add() counts into the current window's slot (one relaxed load and one
// compare-and-swap; the first event of a window resets its slot), and
// PerSecond() weighs the last window by the share of it still within one
// window of `now` (the sliding-window estimate of rate limiters such as
// Cloudflare's):
//   rate = (last x (1 - elapsed share of the current window) + current) / window.
// A window with no event reads as 0; two windows old, nothing counts. Each
// slot packs its window's number (low 40 bits) and its count (24 bits,
// saturating at 16.7 million per window), so that a reader never pairs a
// count with the wrong window. Times are the caller's, on any clock, as long
// as they are after the Unix epoch; a time earlier than the newest Add()'s
// window is counted in whichever slot its own window maps to, or dropped.
// This class is thread-safe.
class EventRate {
 public:
  // `window` in [1 ms, 1 h].
  explicit EventRate(absl::Duration window = absl::Seconds(1));
  EventRate(const EventRate&) = delete;
  EventRate& operator=(const EventRate&) = delete;

  // Add(): one event at `now`.
  void Add(absl::Time now);

  // PerSecond(): the events per second around `now`, >= 0.
  double PerSecond(absl::Time now) const;

 private:
  static constexpr int kCountBits = 24;
  static constexpr uint64_t kMaxCount = (uint64_t{1} << kCountBits) - 1;
  static constexpr uint64_t kWindowMask = (uint64_t{1} << (64 - kCountBits)) - 1;

  // The window `now` is in (its number since the epoch), and how far into
  // it `now` is, in [0, 1).
  int64_t WindowOf(absl::Time now, double* elapsed = nullptr) const;
  // The count of `slot` if it holds `window`, else 0.
  static uint64_t CountIn(uint64_t slot, int64_t window);

  const int64_t window_ns_;
  std::array<std::atomic<uint64_t>, 2> slots_{};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_EVENT_RATE_H_
