#include "src/breaker/sre_breaker.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

constexpr int64_t kLastAdmitGranularityNs = 1000000;  // 1 ms

}  // namespace

absl::Status SreBreaker::Validate(const Options& o) {
  if (!(o.k >= 1.0) || !std::isfinite(o.k)) {
    return absl::InvalidArgumentError(absl::StrCat("sre.k: must be >= 1, got ", o.k));
  }
  if (o.protection < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sre.protection: must be >= 0, got ", o.protection));
  }
  if (absl::Status s = RollingWindow::Validate(o.window, o.buckets, "sre"); !s.ok()) return s;
  if (o.force_pass_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sre.force_pass_interval: must be >= 0, got ", absl::FormatDuration(o.force_pass_interval)));
  }
  if (!(o.max_drop_probability > 0.0 && o.max_drop_probability <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sre.max_drop_probability: must be in (0, 1], got ", o.max_drop_probability));
  }
  if (o.refresh_interval < absl::ZeroDuration() || o.refresh_interval >= o.window) {
    return absl::InvalidArgumentError(
        absl::StrCat("sre.refresh_interval: must be >= 0 and < window (",
                     absl::FormatDuration(o.window), "), got ",
                     absl::FormatDuration(o.refresh_interval)));
  }
  if (o.slow_call_threshold < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sre.slow_call_threshold: must be >= 0, got ", absl::FormatDuration(o.slow_call_threshold)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SreBreaker>> SreBreaker::Create(const Options& options,
                                                               Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<SreBreaker>(new SreBreaker(options, clock));
}

SreBreaker::SreBreaker(const Options& options, Clock& clock)
    : options_(options),
      clock_(clock),
      window_(options.window, options.buckets),
      random_(options.random ? options.random
                             : std::make_shared<SplitMixRandom>(options.seed)),
      last_admit_ns_(absl::ToUnixNanos(clock.Now())),
      dropping_since_ns_(last_admit_ns_.load(std::memory_order_relaxed)) {}

void SreBreaker::Control(BreakerCommand command) {
  switch (command) {
    case BreakerCommand::kForceOpen:
      mode_.store(static_cast<int>(BreakerMode::kForceOpen), std::memory_order_release);
      return;
    case BreakerCommand::kForceClosed:
      mode_.store(static_cast<int>(BreakerMode::kForceClosed), std::memory_order_release);
      return;
    case BreakerCommand::kAutomatic:
      mode_.store(static_cast<int>(BreakerMode::kNormal), std::memory_order_release);
      return;
    case BreakerCommand::kReset: {
      const absl::Time now = clock_.Now();
      window_.Reset(now);
      p_valid_until_ns_.store(INT64_MIN, std::memory_order_release);
      cached_p_.store(0.0, std::memory_order_relaxed);
      NoteDropping(false, now, TransitionCause::kReset);
      return;
    }
  }
}

double SreBreaker::DropProbabilityAt(absl::Time now, const RollingWindow::Counts& c) {
  const double requests = static_cast<double>(
      c.completed() + (options_.count_local_rejections ? c.rejected : 0));
  const double accepts = static_cast<double>(c.success);
  double p = (requests - static_cast<double>(options_.protection) - options_.k * accepts) /
             (requests + 1.0);
  if (p <= 0.0) return 0.0;
  if (options_.recovery_acceleration) {
    const int healthy = window_.TrailingBuckets(now, [](const RollingWindow::Counts& b) {
      return b.success > 0 && b.failure == 0;
    });
    p *= 1.0 - static_cast<double>(healthy) / options_.buckets;
  }
  return std::min(p, options_.max_drop_probability);
}

double SreBreaker::DropProbability() {
  const absl::Time now = clock_.Now();
  return DropProbabilityAt(now, window_.Sum(now));
}

void SreBreaker::NoteDropping(bool dropping, absl::Time now, TransitionCause stop_cause) {
  // Only the thread that flips the flag tells the listener.
  if (dropping_.load(std::memory_order_relaxed) == dropping) return;
  if (dropping_.exchange(dropping, std::memory_order_acq_rel) == dropping) return;
  dropping_since_ns_.store(absl::ToUnixNanos(now), std::memory_order_release);
  if (options_.listener) {
    options_.listener(dropping ? BreakerTransition{BreakerState::kClosed, BreakerState::kOpen,
                                                   now, TransitionCause::kDropsStarted}
                               : BreakerTransition{BreakerState::kOpen, BreakerState::kClosed,
                                                   now, stop_cause});
  }
}

Admission SreBreaker::Allow() {
  const absl::Time now = clock_.Now();
  switch (static_cast<BreakerMode>(mode_.load(std::memory_order_acquire))) {
    case BreakerMode::kForceOpen:
      window_.Add(now, RollingWindow::kRejected);
      return Reject(RejectReason::kForcedOpen);
    case BreakerMode::kForceClosed:
      return Admit(/*generation=*/0, now, /*probe=*/false);
    default:
      break;
  }
  const int64_t now_ns = absl::ToUnixNanos(now);
  double p;
  if (now_ns < p_valid_until_ns_.load(std::memory_order_acquire)) {
    p = cached_p_.load(std::memory_order_relaxed);
  } else {
    p = DropProbabilityAt(now, window_.Sum(now));
    cached_p_.store(p, std::memory_order_relaxed);
    p_valid_until_ns_.store(now_ns + absl::ToInt64Nanoseconds(options_.refresh_interval),
                            std::memory_order_release);
    NoteDropping(p > 0.0, now);
  }
  const int64_t last_admit_ns = last_admit_ns_.load(std::memory_order_relaxed);
  if (p > 0.0) {
    const bool force_pass =
        options_.force_pass_interval > absl::ZeroDuration() &&
        now_ns - last_admit_ns >= absl::ToInt64Nanoseconds(options_.force_pass_interval);
    if (!force_pass && random_->NextUniform() < p) {
      window_.Add(now, RollingWindow::kRejected);
      return Reject(RejectReason::kDropped);
    }
  }
  if (now_ns - last_admit_ns >= kLastAdmitGranularityNs) {
    last_admit_ns_.store(now_ns, std::memory_order_relaxed);
  }
  return Admit(/*generation=*/0, now, /*probe=*/false);
}

void SreBreaker::OnRecord(const Admission& admission, Outcome outcome, absl::Duration latency) {
  if (outcome == Outcome::kNeutral) return;
  const absl::Time end = EndOf(admission, latency, options_.window);
  const bool slow = options_.slow_call_threshold > absl::ZeroDuration() &&
                    latency > options_.slow_call_threshold;
  if (slow) window_.Add(end, RollingWindow::kSlow);
  window_.Add(end, outcome == Outcome::kSuccess && !slow ? RollingWindow::kSuccess
                                                          : RollingWindow::kFailure);
}

BreakerSnapshot SreBreaker::Snapshot() {
  const absl::Time now = clock_.Now();
  BreakerSnapshot s;
  s.counts = window_.Sum(now);
  s.drop_probability = DropProbabilityAt(now, s.counts);
  s.state = s.drop_probability > 0 ? BreakerState::kOpen : BreakerState::kClosed;
  s.mode = static_cast<BreakerMode>(mode_.load(std::memory_order_acquire));
  if (s.mode == BreakerMode::kForceOpen) s.drop_probability = 1.0;
  if (s.mode == BreakerMode::kForceClosed) s.drop_probability = 0.0;
  s.time_in_state = std::max(
      absl::ZeroDuration(),
      now - absl::FromUnixNanos(dropping_since_ns_.load(std::memory_order_acquire)));
  SetRates(s);
  return s;
}

}  // namespace resilience
