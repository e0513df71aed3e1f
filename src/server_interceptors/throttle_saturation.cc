// ThrottleStage's events: when its scope starts rejecting and when it
// admits again (throttle_stage.h).

#include <algorithm>
#include <utility>

#include "src/server_interceptors/throttle_stage.h"

namespace resilience {

void ThrottleStage::NoteRejection(absl::string_view cause) {
  ScopeLimits& limits = *state_->limits;
  if (state_->events == nullptr) return;
  const int64_t now_ns = absl::ToUnixNanos(start_);
  limits.last_rejection_ns.store(now_ns, std::memory_order_relaxed);
  limits.episode_rejections.fetch_add(1, std::memory_order_relaxed);
  // A relaxed read first: a saturated scope's rejections stay plain stores.
  if (limits.saturated.load(std::memory_order_relaxed)) return;
  if (limits.saturated.exchange(true, std::memory_order_acq_rel)) return;
  limits.saturated_since_ns.store(now_ns, std::memory_order_relaxed);
  PostEvent(ThrottleEvent{ThrottleEvent::Kind::kSaturated, state_->method, limits.scope, cause,
                         clock_.WallNow()});
}

void ThrottleStage::NoteAdmission() {
  ScopeLimits& limits = *state_->limits;
  // The admit path of a scope that is not saturated is this one load.
  if (state_->events == nullptr || !limits.saturated.load(std::memory_order_relaxed)) return;
  const absl::Time last_rejection =
      absl::FromUnixNanos(limits.last_rejection_ns.load(std::memory_order_relaxed));
  if (start_ - last_rejection < kThrottleQuietPeriod) return;
  if (!limits.saturated.exchange(false, std::memory_order_acq_rel)) return;
  const absl::Time since =
      absl::FromUnixNanos(limits.saturated_since_ns.load(std::memory_order_relaxed));
  ThrottleEvent event{ThrottleEvent::Kind::kRecovered, state_->method, limits.scope, "",
                      clock_.WallNow()};
  event.saturated_for = std::max(last_rejection - since, absl::ZeroDuration());
  event.rejected = limits.episode_rejections.exchange(0, std::memory_order_relaxed);
  PostEvent(std::move(event));
}

void ThrottleStage::PostEvent(ThrottleEvent event) {
  // The listener outlives the executor (ServerResilienceImpl::listener_).
  ResilienceEvents* const listener = state_->listener;
  state_->events->Post(
      [listener, event = std::move(event)] { listener->OnThrottleSaturation(event); });
}

}  // namespace resilience
