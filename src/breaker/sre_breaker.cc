#include "src/breaker/sre_breaker.h"

#include <algorithm>
#include <cmath>
#include <memory>

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
      dropping_since_ns_(last_admit_ns_.load(std::memory_order_relaxed)) {
  windows_[CriticalityIndex(Criticality::kCritical)].store(&window_, std::memory_order_release);
  for (int i = 0; i < kCriticalityLevels; ++i) {
    cached_p_[i].store(0.0, std::memory_order_relaxed);
    p_valid_until_ns_[i].store(INT64_MIN, std::memory_order_relaxed);
  }
}

SreBreaker::~SreBreaker() {
  for (int i = 0; i < kCriticalityLevels; ++i) {
    RollingWindow* w = windows_[i].load(std::memory_order_acquire);
    if (w != &window_) delete w;
  }
}

RollingWindow& SreBreaker::Window(int level) {
  RollingWindow* w = windows_[level].load(std::memory_order_acquire);
  if (w != nullptr) return *w;
  auto made = std::make_unique<RollingWindow>(options_.window, options_.buckets);
  if (windows_[level].compare_exchange_strong(w, made.get(), std::memory_order_acq_rel)) {
    return *made.release();
  }
  return *w;  // another thread made it first
}

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
      for (int i = 0; i < kCriticalityLevels; ++i) {
        if (RollingWindow* w = Existing(i)) w->Reset(now);
        p_valid_until_ns_[i].store(INT64_MIN, std::memory_order_release);
        cached_p_[i].store(0.0, std::memory_order_relaxed);
      }
      NoteDropping(-1, false, now, TransitionCause::kReset);
      return;
    }
  }
}

double SreBreaker::DropProbabilityAt(absl::Time now, RollingWindow& window,
                                     const RollingWindow::Counts& c) {
  const double requests = static_cast<double>(
      c.completed() + (options_.count_local_rejections ? c.rejected : 0));
  const double accepts = static_cast<double>(c.success);
  double p = (requests - static_cast<double>(options_.protection) - options_.k * accepts) /
             (requests + 1.0);
  if (p <= 0.0) return 0.0;
  if (options_.recovery_acceleration) {
    const int healthy = window.TrailingBuckets(now, [](const RollingWindow::Counts& b) {
      return b.success > 0 && b.failure == 0;
    });
    p *= 1.0 - static_cast<double>(healthy) / options_.buckets;
  }
  return std::min(p, options_.max_drop_probability);
}

double SreBreaker::DropProbability(Criticality level) {
  const absl::Time now = clock_.Now();
  RollingWindow* window = Existing(CriticalityIndex(level));
  if (window == nullptr) return 0.0;  // no call of that level yet
  return DropProbabilityAt(now, *window, window->Sum(now));
}

void SreBreaker::NoteDropping(int level, bool dropping, absl::Time now,
                              TransitionCause stop_cause) {
  // Only the thread that changes the set between empty and not tells the
  // listener.
  const unsigned bit = level < 0 ? ~0u : 1u << level;
  unsigned before = dropping_.load(std::memory_order_relaxed);
  unsigned after;
  do {
    after = dropping ? (before | bit) : (before & ~bit);
    if (after == before) return;
  } while (!dropping_.compare_exchange_weak(before, after, std::memory_order_acq_rel,
                                            std::memory_order_relaxed));
  if ((before != 0) == (after != 0)) return;
  dropping_since_ns_.store(absl::ToUnixNanos(now), std::memory_order_release);
  if (options_.listener) {
    BreakerTransition transition;
    transition.from = dropping ? BreakerState::kClosed : BreakerState::kOpen;
    transition.to = dropping ? BreakerState::kOpen : BreakerState::kClosed;
    transition.at = now;
    transition.cause = dropping ? TransitionCause::kDropsStarted : stop_cause;
    options_.listener(transition);
  }
}

Admission SreBreaker::Allow(Criticality criticality) {
  const absl::Time now = clock_.Now();
  const int level = std::clamp(CriticalityIndex(criticality), 0, kCriticalityLevels - 1);
  RollingWindow& window = Window(level);
  // The admission's generation (SreBreaker has none) carries the level to
  // OnRecord().
  const uint64_t generation = static_cast<uint64_t>(level);
  switch (static_cast<BreakerMode>(mode_.load(std::memory_order_acquire))) {
    case BreakerMode::kForceOpen:
      window.Add(now, RollingWindow::kRejected);
      return Reject(RejectReason::kForcedOpen);
    case BreakerMode::kForceClosed:
      return Admit(generation, now, /*probe=*/false);
    default:
      break;
  }
  const int64_t now_ns = absl::ToUnixNanos(now);
  double p;
  if (now_ns < p_valid_until_ns_[level].load(std::memory_order_acquire)) {
    p = cached_p_[level].load(std::memory_order_relaxed);
  } else {
    p = DropProbabilityAt(now, window, window.Sum(now));
    cached_p_[level].store(p, std::memory_order_relaxed);
    p_valid_until_ns_[level].store(now_ns + absl::ToInt64Nanoseconds(options_.refresh_interval),
                                   std::memory_order_release);
    NoteDropping(level, p > 0.0, now);
  }
  const int64_t last_admit_ns = last_admit_ns_.load(std::memory_order_relaxed);
  if (p > 0.0) {
    const bool force_pass =
        options_.force_pass_interval > absl::ZeroDuration() &&
        now_ns - last_admit_ns >= absl::ToInt64Nanoseconds(options_.force_pass_interval);
    if (!force_pass && random_->NextUniform() < p) {
      window.Add(now, RollingWindow::kRejected);
      return Reject(RejectReason::kDropped);
    }
  }
  if (now_ns - last_admit_ns >= kLastAdmitGranularityNs) {
    last_admit_ns_.store(now_ns, std::memory_order_relaxed);
  }
  return Admit(generation, now, /*probe=*/false);
}

void SreBreaker::OnRecord(const Admission& admission, Outcome outcome, absl::Duration latency) {
  if (outcome == Outcome::kNeutral) return;
  const absl::Time end = EndOf(admission, latency, options_.window);
  const bool slow = options_.slow_call_threshold > absl::ZeroDuration() &&
                    latency > options_.slow_call_threshold;
  // Allow() made the window of the admission's level.
  RollingWindow* window = Existing(static_cast<int>(
      std::min<uint64_t>(admission.generation(), kCriticalityLevels - 1)));
  if (window == nullptr) window = &window_;
  if (slow) window->Add(end, RollingWindow::kSlow);
  window->Add(end, outcome == Outcome::kSuccess && !slow ? RollingWindow::kSuccess
                                                          : RollingWindow::kFailure);
}

BreakerSnapshot SreBreaker::Snapshot() {
  const absl::Time now = clock_.Now();
  BreakerSnapshot s;
  // Every level's window: the counts summed, the largest p_drop.
  for (int i = 0; i < kCriticalityLevels; ++i) {
    RollingWindow* window = Existing(i);
    if (window == nullptr) continue;
    const RollingWindow::Counts c = window->Sum(now);
    s.counts.success += c.success;
    s.counts.failure += c.failure;
    s.counts.rejected += c.rejected;
    s.counts.slow += c.slow;
    s.drop_probability = std::max(s.drop_probability, DropProbabilityAt(now, *window, c));
  }
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
