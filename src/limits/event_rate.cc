#include "src/limits/event_rate.h"

#include <algorithm>

namespace resilience {

EventRate::EventRate(absl::Duration window)
    : window_ns_(
          absl::ToInt64Nanoseconds(std::clamp(window, absl::Milliseconds(1), absl::Hours(1)))) {}

int64_t EventRate::WindowOf(absl::Time now, double* elapsed) const {
  const int64_t ns = std::max<int64_t>(absl::ToUnixNanos(now), 0);
  if (elapsed != nullptr) {
    *elapsed = static_cast<double>(ns % window_ns_) / static_cast<double>(window_ns_);
  }
  return ns / window_ns_;
}

uint64_t EventRate::CountIn(uint64_t slot, int64_t window) {
  if ((slot >> kCountBits) != (static_cast<uint64_t>(window) & kWindowMask)) return 0;
  return slot & kMaxCount;
}

void EventRate::Add(absl::Time now) {
  const int64_t window = WindowOf(now);
  const uint64_t mine = (static_cast<uint64_t>(window) & kWindowMask) << kCountBits;
  std::atomic<uint64_t>& slot = slots_[window & 1];
  uint64_t seen = slot.load(std::memory_order_relaxed);
  while (true) {
    uint64_t next;
    if ((seen & ~kMaxCount) == mine) {
      if ((seen & kMaxCount) == kMaxCount) return;  // saturated
      next = seen + 1;
    } else {
      next = mine | 1;  // the slot's first event of this window
    }
    if (slot.compare_exchange_weak(seen, next, std::memory_order_relaxed)) return;
  }
}

double EventRate::PerSecond(absl::Time now) const {
  double elapsed = 0;
  const int64_t window = WindowOf(now, &elapsed);
  const uint64_t current = CountIn(slots_[window & 1].load(std::memory_order_relaxed), window);
  const uint64_t last =
      CountIn(slots_[(window - 1) & 1].load(std::memory_order_relaxed), window - 1);
  const double events = static_cast<double>(last) * (1 - elapsed) + static_cast<double>(current);
  return events * 1e9 / static_cast<double>(window_ns_);
}

}  // namespace resilience
