#include "src/limits/adaptive_concurrency_limiter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

constexpr int64_t kMaxLatencyNs = int64_t{3600} * 1'000'000'000;

int64_t Nanos(absl::Time t) { return absl::ToUnixNanos(t); }

// A latency in [0, 1h], in nanoseconds.
int64_t LatencyNs(absl::Duration latency) {
  return std::clamp<int64_t>(absl::ToInt64Nanoseconds(latency), 0, kMaxLatencyNs);
}

// A duration in nanoseconds; INT64_MAX for anything from 1h on.
int64_t FloorNs(absl::Duration d) {
  return d >= absl::Nanoseconds(kMaxLatencyNs) ? INT64_MAX
                                               : std::max<int64_t>(0, absl::ToInt64Nanoseconds(d));
}

}  // namespace

absl::Status AdaptiveConcurrencyLimiter::Validate(const Options& o) {
  if (o.min_limit < 1 || o.min_limit > kMaxLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_limit: must be in [1, ", kMaxLimit, "], got ", o.min_limit));
  }
  if (o.max_limit < o.min_limit || o.max_limit > kMaxLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_limit: must be in [min_limit (",
                                                   o.min_limit, "), ", kMaxLimit, "], got ",
                                                   o.max_limit));
  }
  if (o.initial_limit < o.min_limit || o.initial_limit > o.max_limit) {
    return absl::InvalidArgumentError(absl::StrCat("initial_limit: must be in [min_limit (",
                                                   o.min_limit, "), max_limit (", o.max_limit,
                                                   ")], got ", o.initial_limit));
  }
  if (o.sample_window < absl::Milliseconds(1) || o.sample_window > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("sample_window: must be in [1ms, 1h], got ",
                                                   absl::FormatDuration(o.sample_window)));
  }
  if (o.min_samples < 1 || o.min_samples > kMaxSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_samples: must be in [1, ", kMaxSamples, "], got ", o.min_samples));
  }
  return absl::OkStatus();
}

AdaptiveConcurrencyLimiter::AdaptiveConcurrencyLimiter(const Options& options,
                                                       absl::Duration drop_latency, Clock& clock,
                                                       const Decision& first)
    : options_(options),
      clock_(clock),
      drop_latency_ns_(FloorNs(drop_latency)),
      limit_(std::clamp(first.limit, options.min_limit, options.max_limit)),
      window_end_ns_(Nanos(first.window_end)),
      min_samples_(first.min_samples),
      samples_since_ns_(Nanos(first.samples_since)),
      censored_floor_ns_(FloorNs(first.censored_floor)),
      give_up_after_(std::max<int64_t>(0, first.give_up_after)) {}

void AdaptiveConcurrencyLimiter::Release(Outcome outcome, absl::Duration latency) {
  const int64_t before = in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  if (outcome == Outcome::kNeutral) {
    // Unanswered: only a window that gives up counts it.
    if (give_up_after_.load(std::memory_order_relaxed) == 0) return;
    Record(/*drop=*/false, /*sample=*/false, LatencyNs(latency), before);
    return;
  }
  const int64_t latency_ns = LatencyNs(latency);
  Record(outcome == Outcome::kFailure || latency_ns >= drop_latency_ns_, /*sample=*/true,
         latency_ns, before);
}

void AdaptiveConcurrencyLimiter::ReleaseExpired(absl::Duration ran) {
  const int64_t before = in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  const int64_t ran_ns = LatencyNs(ran);
  Record(/*drop=*/true, ran_ns >= censored_floor_ns_.load(std::memory_order_relaxed), ran_ns,
         before);
}

void AdaptiveConcurrencyLimiter::Record(bool drop, bool sample, int64_t latency_ns,
                                        int64_t before) {
  const int64_t now = Nanos(clock_.Now());
  if (drop) drops_.fetch_add(1, std::memory_order_relaxed);
  const int64_t give_up = give_up_after_.load(std::memory_order_relaxed);
  // Admitted at now - latency; saturating, as now is any int64.
  int64_t admitted;
  if (!__builtin_sub_overflow(now, latency_ns, &admitted) &&
      admitted >= samples_since_ns_.load(std::memory_order_relaxed)) {
    if (sample) {
      latencies_.Add(absl::Nanoseconds(latency_ns));
      samples_.fetch_add(1, std::memory_order_relaxed);
    } else if (give_up > 0) {
      unanswered_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  int64_t seen = max_in_flight_.load(std::memory_order_relaxed);
  while (before > seen && !max_in_flight_.compare_exchange_weak(seen, before,
                                                                std::memory_order_relaxed)) {
  }
  if (now < window_end_ns_.load(std::memory_order_acquire)) return;
  // Enough latency samples; or enough drops (a window in which every call
  // expires without a sample must close too: AIMD's timeouts), or, for a
  // window that gives up, enough unanswered calls instead.
  const int64_t enough = min_samples_.load(std::memory_order_relaxed);
  if (samples_.load(std::memory_order_relaxed) < enough &&
      (give_up > 0 ? unanswered_.load(std::memory_order_relaxed) < give_up
                   : drops_.load(std::memory_order_relaxed) < enough)) {
    return;
  }
  // One closer; the others go on without waiting.
  if (closing_.exchange(true, std::memory_order_acquire)) return;
  // Re-checked: another thread may have closed this window meanwhile.
  if (now >= window_end_ns_.load(std::memory_order_acquire)) CloseWindow(now);
  closing_.store(false, std::memory_order_release);
}

void AdaptiveConcurrencyLimiter::CloseWindow(int64_t now_ns) {
  MutexLock lock(&mu_);
  Window w;
  w.now = absl::FromUnixNanos(now_ns);
  w.samples = samples_.exchange(0, std::memory_order_relaxed);
  w.median_latency = latencies_.TakeQuantile(0.5);
  w.drops = drops_.exchange(0, std::memory_order_relaxed);
  w.unanswered = unanswered_.exchange(0, std::memory_order_relaxed);
  w.max_in_flight =
      max_in_flight_.exchange(in_flight_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  const Decision next = OnWindow(w);
  limit_.store(std::clamp(next.limit, options_.min_limit, options_.max_limit),
               std::memory_order_relaxed);
  samples_since_ns_.store(Nanos(next.samples_since), std::memory_order_relaxed);
  censored_floor_ns_.store(FloorNs(next.censored_floor), std::memory_order_relaxed);
  give_up_after_.store(std::max<int64_t>(0, next.give_up_after), std::memory_order_relaxed);
  min_samples_.store(std::max<int64_t>(1, next.min_samples), std::memory_order_relaxed);
  window_end_ns_.store(Nanos(next.window_end), std::memory_order_release);
}

}  // namespace resilience
