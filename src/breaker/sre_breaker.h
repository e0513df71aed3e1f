// File: src/breaker/sre_breaker.h
//
// Client-side adaptive throttling from Google's SRE book ("Handling Overload",
// chapter 21), as go-zero's googleBreaker implements it, with its two recovery
// refinements.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_SRE_BREAKER_H_
#define GRPC_RESILIENCE_SRC_BREAKER_SRE_BREAKER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"
#include "src/core/random_source.h"
#include "src/breaker/rolling_window.h"

namespace resilience {

// SreBreaker
//
// The algorithm:
//   Over the rolling window,
//     requests = successes + failures (+ local rejections when
//                count_local_rejections)
//     accepts  = successes
//     p_drop   = max(0, (requests - protection - k * accepts) / (requests + 1))
//   Allow() drops a call with probability p_drop (capped at
//   max_drop_probability). There are no states: the breaker "opens" gradually
//   as the backend accepts fewer calls than requests / k.
//
// Refinements (docs/algorithms.md, §2 "SRE adaptive throttling"):
//   - force_pass_interval: if nothing was admitted for that long, the next
//     call is admitted whatever p_drop says, so a recovered backend is found.
//   - recovery_acceleration: p_drop is scaled by 1 - healthy/buckets, where
//     healthy is the trailing run of complete buckets with successes and no
//     failures: once the backend answers again, drops fade out bucket by
//     bucket instead of waiting for the failures to leave the window.
//
// Criticality (docs/criticality.md): the statistics are kept per level, as
// the SRE book's client-side throttling does: a call of level L is dropped
// with the p_drop of L's own window, so that when the backend sheds its
// SHEDDABLE calls, the client throttles SHEDDABLE and keeps sending
// CRITICAL. Allow() is Allow(CRITICAL), whose window is the one every call
// used before: a client that sets no criticality behaves exactly as before.
// The other levels' windows are made on their first call. The events and
// Snapshot() speak for all levels: dropping while any level drops, the
// counts summed, the drop probability the largest.
//
// Locking: none on the hot path. The window is lock-free (see RollingWindow),
// p_drop is recomputed at most once per refresh_interval and cached in two
// atomics, the random draw is one atomic add, and the last-admission time is
// written at most once per millisecond. The listener is called on the thread whose call
// saw p_drop cross 0, outside any lock. This class is thread-safe.
class SreBreaker final : public Breaker {
 public:
  struct Options {
    // K: how many requests per accepted one the backend may see before
    // dropping starts (the SRE book prefers 2; go-zero uses 1.5). >= 1.
    // Defaults to 1.5.
    double k = 1.5;
    // Requests in the window that are never dropped (go-zero's cushion of 5,
    // so a handful of early failures drop nothing). >= 0. Defaults to 5.
    int64_t protection = 5;
    // Length of the rolling window. Defaults to 10 s.
    absl::Duration window = absl::Seconds(10);
    // Buckets in the window (10 s / 40 = 250 ms each). Defaults to 40.
    int buckets = 40;
    // Count local drops as requests, as the SRE book and go-zero do. Off by
    // default: counting its own drops keeps p_drop up after the backend is
    // back (the drops are "requests" without "accepts"), so that the
    // success rate takes 6-10 s instead of about 3.4 s to return to 99% of
    // an oracle's after an outage (docs/breaker-quality.md). Defaults to
    // false.
    bool count_local_rejections = false;
    // Admit one call after this long without an admission; zero disables.
    // Defaults to 1 s.
    absl::Duration force_pass_interval = absl::Seconds(1);
    // Scale p_drop down by the trailing run of healthy buckets. Defaults to
    // true.
    bool recovery_acceleration = true;
    // Upper bound of p_drop, in (0, 1] (Envoy caps at 0.8). Defaults to 1.
    double max_drop_probability = 1.0;
    // A call slower than this counts as a failure; zero disables. Defaults to
    // zero.
    absl::Duration slow_call_threshold = absl::ZeroDuration();
    // Allow() recomputes p_drop from the window at most this often and uses
    // the last value in between; zero recomputes on every call. Reading the
    // window means reading every CPU's counters, which other CPUs keep
    // writing; a p_drop from a 10 s window does not move in 1 ms. >= 0 and
    // < window. Defaults to 1 ms.
    absl::Duration refresh_interval = absl::Milliseconds(1);
    // Seed of the drop decisions when `random` is not set. Defaults to 1.
    uint64_t seed = 1;
    // Source of the drop decisions; overrides `seed` when set.
    std::shared_ptr<RandomSource> random;
    // Called when p_drop becomes > 0 (closed -> open) and when it returns to
    // 0 (open -> closed).
    BreakerListener listener;
  };

  // Create()
  //
  // InvalidArgument naming the field and value for invalid options.
  // `clock` must outlive the breaker.
  static absl::StatusOr<std::unique_ptr<SreBreaker>> Create(const Options& options,
                                                           Clock& clock);
  static absl::Status Validate(const Options& options);

  ~SreBreaker() override;

  Admission Allow() override { return Allow(Criticality::kCritical); }
  Admission Allow(Criticality level) override;
  BreakerSnapshot Snapshot() override;
  absl::string_view kind() const override { return "sre"; }
  // force_open rejects every call (reason kForcedOpen), force_closed admits
  // every call; both keep counting. reset clears the window.
  void Control(BreakerCommand command) override;

  // DropProbability()
  //
  // p_drop as Allow(level) would use it now (after refinements and cap).
  double DropProbability(Criticality level = Criticality::kCritical);

  const Options& options() const { return options_; }

 private:
  SreBreaker(const Options& options, Clock& clock);

  void OnRecord(const Admission& admission, Outcome outcome, absl::Duration latency) override;
  double DropProbabilityAt(absl::Time now, RollingWindow& window,
                           const RollingWindow::Counts& counts);
  // The window of `level`, made on its first use; null only before then
  // (Existing()).
  RollingWindow& Window(int level);
  RollingWindow* Existing(int level) const {
    return windows_[level].load(std::memory_order_acquire);
  }
  // Tells the listener when dropping flips (level `level` starts or stops
  // dropping and no other level drops); a stop is reported with
  // `stop_cause`. level < 0: every level stops.
  void NoteDropping(int level, bool dropping, absl::Time now,
                    TransitionCause stop_cause = TransitionCause::kDropsStopped);

  const Options options_;
  Clock& clock_;
  // CRITICAL's window (every call's without a criticality).
  RollingWindow window_;
  // Per level: &window_ for CRITICAL, the others owned (deleted with the
  // breaker), null until their first call.
  std::array<std::atomic<RollingWindow*>, kCriticalityLevels> windows_{};
  std::shared_ptr<RandomSource> random_;
  // Unix nanoseconds of the last admission, for force_pass_interval. Atomic:
  // read on every Allow() without a lock; written at most once per ms.
  std::atomic<int64_t> last_admit_ns_;
  // Per level: p_drop as last computed, valid until `p_valid_until_ns_`
  // (Unix ns). Atomic: read on every Allow() without a lock, written once
  // per refresh.
  std::array<std::atomic<double>, kCriticalityLevels> cached_p_{};
  std::array<std::atomic<int64_t>, kCriticalityLevels> p_valid_until_ns_{};
  // Bit L: level L's p_drop was last seen > 0; the listener hears when the
  // set becomes non-empty and empty again.
  std::atomic<unsigned> dropping_{0};
  // When dropping_ last flipped (the clock's Now(), in nanoseconds).
  std::atomic<int64_t> dropping_since_ns_;
  // BreakerMode: kNormal, or an operator's kForceOpen / kForceClosed.
  std::atomic<int> mode_{static_cast<int>(BreakerMode::kNormal)};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_SRE_BREAKER_H_
