#include "src/breaker/three_state_breaker.h"

#include <algorithm>

namespace resilience {

absl::StatusOr<std::unique_ptr<ThreeStateBreaker>> ThreeStateBreaker::Create(
    const Options& options, Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<ThreeStateBreaker>(new ThreeStateBreaker(options, clock));
}

ThreeStateBreaker::ThreeStateBreaker(const Options& options, Clock& clock)
    : options_(options),
      clock_(clock),
      window_(options.window, options.buckets),
      mode_(static_cast<int>(options.mode)),
      state_since_ns_(absl::ToUnixNanos(clock.Now())),
      open_duration_(options.open_duration) {}

void ThreeStateBreaker::SetMode(BreakerMode mode) {
  MutexLock lock(&mu_);
  mode_.store(static_cast<int>(mode), std::memory_order_release);
}

void ThreeStateBreaker::ContinueFrom(const BreakerSnapshot& previous) {
  Breaker::ContinueFrom(previous);
  if (previous.state == BreakerState::kClosed) return;
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  open_duration_ = options_.open_duration;
  const absl::Time since = now - previous.time_in_state;
  open_until_ = previous.state == BreakerState::kOpen ? std::max(now, since + open_duration_) : now;
  state_since_ns_.store(absl::ToUnixNanos(previous.state == BreakerState::kOpen ? since : now),
                        std::memory_order_release);
  state_.store(static_cast<int>(BreakerState::kOpen), std::memory_order_release);
}

void ThreeStateBreaker::Control(BreakerCommand command) {
  switch (command) {
    case BreakerCommand::kForceOpen:
      return SetMode(BreakerMode::kForceOpen);
    case BreakerCommand::kForceClosed:
      return SetMode(BreakerMode::kForceClosed);
    case BreakerCommand::kAutomatic:
      return SetMode(options_.mode);
    case BreakerCommand::kReset:
      break;
  }
  const absl::Time now = clock_.Now();
  Transitions transitions;
  {
    MutexLock lock(&mu_);
    window_.Reset(now);
    open_duration_ = options_.open_duration;
    if (state() != BreakerState::kClosed) {
      SetState(BreakerState::kClosed, now, TransitionCause::kReset, transitions);
    } else {
      // Admissions before the reset report into a window they did not see.
      generation_.fetch_add(1, std::memory_order_acq_rel);
      consecutive_failures_.store(0, std::memory_order_relaxed);
    }
  }
  Notify(transitions);
}

absl::Duration ThreeStateBreaker::current_open_duration() {
  MutexLock lock(&mu_);
  return open_duration_;
}

void ThreeStateBreaker::Notify(const Transitions& transitions) {
  if (!options_.listener) return;
  for (int i = 0; i < transitions.size; ++i) options_.listener(transitions.items[i]);
}

void ThreeStateBreaker::SetState(BreakerState to, absl::Time now, TransitionCause cause,
                                 Transitions& out) {
  const BreakerState from = state();
  generation_.fetch_add(1, std::memory_order_acq_rel);
  consecutive_failures_.store(0, std::memory_order_relaxed);
  probes_in_flight_ = 0;
  probe_successes_ = 0;
  probes_waiting_since_ = absl::InfiniteFuture();
  superseded_before_ = absl::InfinitePast();
  state_.store(static_cast<int>(to), std::memory_order_release);
  state_since_ns_.store(absl::ToUnixNanos(now), std::memory_order_release);
  out.Add(from, to, now, cause);
}

absl::Duration ThreeStateBreaker::GrownOpenDuration() const {
  const double grown = absl::ToDoubleSeconds(open_duration_) * options_.open_duration_multiplier;
  return std::min(absl::Seconds(grown), options_.max_open_duration);
}

void ThreeStateBreaker::OpenLocked(absl::Time now, bool backoff, TransitionCause cause,
                                   Transitions& out) {
  if (backoff) {
    // A re-open without a full close in between: grow the open period.
    open_duration_ = GrownOpenDuration();
  } else {
    open_duration_ = options_.open_duration;
  }
  open_until_ = now + open_duration_;
  disconnected_seen_ = false;
  SetState(BreakerState::kOpen, now, cause, out);
}

Admission ThreeStateBreaker::Allow() {
  return Decide([] { return true; });
}

Admission ThreeStateBreaker::AllowWithConnection(Criticality /*level*/,
                                                 absl::FunctionRef<bool()> connected) {
  return Decide(connected);
}

Admission ThreeStateBreaker::Decide(absl::FunctionRef<bool()> connected) {
  const absl::Time now = clock_.Now();
  switch (static_cast<BreakerMode>(mode_.load(std::memory_order_acquire))) {
    case BreakerMode::kForceOpen:
      window_.Add(now, RollingWindow::kRejected);
      return Reject(RejectReason::kForcedOpen);
    case BreakerMode::kForceClosed:
    case BreakerMode::kDisabled:
    case BreakerMode::kMetricsOnly:
      return Admit(generation_.load(std::memory_order_acquire), now, /*probe=*/false);
    case BreakerMode::kNormal:
      break;
  }
  // Hot path: Closed needs no lock. The generation is read before the state
  // is re-checked, so a trip in between makes this admission stale, not wrong.
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (state() == BreakerState::kClosed) return Admit(generation, now, /*probe=*/false);
  // Asked outside the lock: the channel's state is its own to read.
  const bool is_connected = connected();

  Transitions transitions;
  Admission result;
  {
    MutexLock lock(&mu_);
    const bool gated = options_.health_gated && health_known_;
    switch (state()) {
      case BreakerState::kClosed:
        result = Admit(generation_.load(std::memory_order_relaxed), now, false);
        break;
      case BreakerState::kOpen:
        if (!is_connected) disconnected_seen_ = true;
        if (is_connected && disconnected_seen_ && !gated) {
          SetState(BreakerState::kHalfOpen, now, TransitionCause::kReconnected, transitions);
          last_probe_admit_ = absl::InfinitePast();
        } else if (now < open_until_ || gated) {
          result = Reject(RejectReason::kOpen);
          break;
        } else if (!is_connected) {
          // The open period is over, but a probe could reach no server: it
          // waits for the connection, and the period does not grow.
          result = Reject(RejectReason::kAwaitingConnection);
          break;
        } else {
          SetState(BreakerState::kHalfOpen, now, TransitionCause::kOpenPeriodEnded, transitions);
        }
        [[fallthrough]];
      case BreakerState::kHalfOpen:
        if (probes_in_flight_ > 0 && now - probes_waiting_since_ >= options_.half_open_max_wait) {
          OpenLocked(now, /*backoff=*/true, TransitionCause::kProbeTimedOut, transitions);
          result = Reject(RejectReason::kOpen);
        } else if (!is_connected) {
          result = Reject(RejectReason::kAwaitingConnection);
        } else if (probes_in_flight_ >= options_.half_open_max_probes &&
                   !(options_.probe_overdue > absl::ZeroDuration() &&
                     now - last_probe_admit_ >= options_.probe_overdue)) {
          result = Reject(RejectReason::kHalfOpenProbeLimit);
        } else if (now - last_probe_admit_ < options_.probe_interval) {
          result = Reject(RejectReason::kHalfOpenProbeInterval);
        } else {
          // Beyond the probe limit only because the others are overdue: the
          // probes in flight are superseded by this one.
          if (probes_in_flight_ >= options_.half_open_max_probes) superseded_before_ = now;
          if (probes_in_flight_++ == 0) probes_waiting_since_ = now;
          last_probe_admit_ = now;
          result = Admit(generation_.load(std::memory_order_relaxed), now, /*probe=*/true);
        }
        break;
    }
  }
  if (!result.admitted()) window_.Add(now, RollingWindow::kRejected);
  Notify(transitions);
  return result;
}

void ThreeStateBreaker::OnRecord(const Admission& admission, Outcome outcome,
                                 absl::Duration latency) {
  const auto mode = static_cast<BreakerMode>(mode_.load(std::memory_order_acquire));
  if (mode == BreakerMode::kDisabled) return;
  const absl::Time end = EndOf(admission, latency, options_.window);
  if (admission.generation() != generation_.load(std::memory_order_acquire)) return;  // stale

  const bool slow = options_.slow_call_threshold > absl::ZeroDuration() &&
                    latency > options_.slow_call_threshold;
  const bool failure = outcome == Outcome::kFailure || (outcome == Outcome::kSuccess && slow);
  if (admission.probe()) {
    RecordProbe(admission,
                outcome == Outcome::kNeutral ? Outcome::kNeutral
                                             : (failure ? Outcome::kFailure : Outcome::kSuccess),
                end);
    return;
  }
  if (outcome == Outcome::kNeutral) return;

  if (slow) window_.Add(end, RollingWindow::kSlow);
  if (!failure) {
    window_.Add(end, RollingWindow::kSuccess);
    // Avoid a shared write when there is nothing to reset.
    if (consecutive_failures_.load(std::memory_order_relaxed) != 0) {
      consecutive_failures_.store(0, std::memory_order_relaxed);
    }
    return;
  }
  window_.Add(end, RollingWindow::kFailure);
  const int64_t consecutive = consecutive_failures_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (mode != BreakerMode::kNormal) return;  // counts, never changes state
  if (std::optional<Trip> trip = ShouldTrip(end, consecutive)) {
    TripFromClosed(admission.generation(), end, *trip);
  }
}

std::optional<ThreeStateBreaker::Trip> ThreeStateBreaker::ShouldTrip(absl::Time now,
                                                                     int64_t consecutive) {
  if (options_.consecutive_failures > 0 && consecutive >= options_.consecutive_failures) {
    return Trip{TransitionCause::kConsecutiveFailures, static_cast<double>(consecutive),
                static_cast<double>(options_.consecutive_failures), 0};
  }
  const RollingWindow::Counts c = window_.Sum(now);
  const int64_t completed = c.completed();
  if (completed < options_.min_requests) return std::nullopt;
  if (static_cast<double>(c.failure) >= options_.failure_rate_threshold * completed) {
    return Trip{TransitionCause::kFailureRate, static_cast<double>(c.failure) / completed,
                options_.failure_rate_threshold, completed};
  }
  if (options_.slow_call_rate_threshold > 0 &&
      static_cast<double>(c.slow) >= options_.slow_call_rate_threshold * completed) {
    return Trip{TransitionCause::kSlowCallRate, static_cast<double>(c.slow) / completed,
                options_.slow_call_rate_threshold, completed};
  }
  return std::nullopt;
}

void ThreeStateBreaker::TripFromClosed(uint64_t generation, absl::Time now, const Trip& trip) {
  Transitions transitions;
  {
    MutexLock lock(&mu_);
    // Another thread may have tripped (and even recovered) already.
    if (state() != BreakerState::kClosed ||
        generation != generation_.load(std::memory_order_relaxed)) {
      return;
    }
    OpenLocked(now, /*backoff=*/false, trip.cause, transitions);
    BreakerTransition& opened = transitions.items[transitions.size - 1];
    opened.figure = trip.figure;
    opened.threshold = trip.threshold;
    opened.calls = trip.calls;
  }
  Notify(transitions);
}

void ThreeStateBreaker::RecordProbe(const Admission& admission, Outcome outcome,
                                    absl::Time now) {
  Transitions transitions;
  {
    MutexLock lock(&mu_);
    if (admission.generation() != generation_.load(std::memory_order_relaxed) ||
        state() != BreakerState::kHalfOpen) {
      return;
    }
    // Any result, neutral included, frees the probe's slot.
    --probes_in_flight_;
    probes_waiting_since_ = probes_in_flight_ > 0 ? now : absl::InfiniteFuture();
    if (outcome == Outcome::kNeutral) {
      // Says nothing about the backend: the next probe decides.
    } else if (outcome == Outcome::kFailure && admission.start() < superseded_before_) {
      // A failure of a probe sent before an overdue one: it says the backend
      // was failing when it was sent; the newer probe in flight will tell
      // about a later time. Re-opening from now would hold every call back
      // for a whole open period after a backend that may have recovered in
      // between. If the (grown) open period is no longer than probe_overdue,
      // re-opening would not space the probes further apart than the overdue
      // ones already are: the failure only frees its slot. Otherwise the
      // breaker backs off as usual, but counting the open period from the
      // newest probe sent, not from the arrival of this old news.
      if (GrownOpenDuration() > options_.probe_overdue) {
        const absl::Time newest = last_probe_admit_;
        OpenLocked(now, /*backoff=*/true, TransitionCause::kProbeFailed, transitions);
        open_until_ = std::min(open_until_, newest + open_duration_);
      }
    } else if (outcome == Outcome::kFailure) {
      OpenLocked(now, /*backoff=*/true, TransitionCause::kProbeFailed, transitions);
    } else if (++probe_successes_ >= options_.half_open_successes_to_close) {
      window_.Reset(now);
      open_duration_ = options_.open_duration;
      SetState(BreakerState::kClosed, now, TransitionCause::kProbesSucceeded, transitions);
    }
  }
  Notify(transitions);
}

void ThreeStateBreaker::OnHealth(Health health) {
  if (!options_.health_gated ||
      static_cast<BreakerMode>(mode_.load(std::memory_order_acquire)) != BreakerMode::kNormal) {
    return;
  }
  const absl::Time now = clock_.Now();
  Transitions transitions;
  {
    MutexLock lock(&mu_);
    health_known_ = health != Health::kUnknown;
    switch (health) {
      case Health::kServing:
        if (state() == BreakerState::kOpen) {
          SetState(BreakerState::kHalfOpen, now, TransitionCause::kHealthServing, transitions);
          last_probe_admit_ = absl::InfinitePast();
        }
        break;
      case Health::kNotServing:
        if (state() == BreakerState::kClosed) {
          OpenLocked(now, /*backoff=*/false, TransitionCause::kHealthNotServing, transitions);
        } else if (state() == BreakerState::kHalfOpen) {
          OpenLocked(now, /*backoff=*/true, TransitionCause::kHealthNotServing, transitions);
        }
        break;
      case Health::kUnknown:
        break;
    }
  }
  Notify(transitions);
}

BreakerSnapshot ThreeStateBreaker::Snapshot() {
  const absl::Time now = clock_.Now();
  BreakerSnapshot s;
  s.counts = window_.Sum(now);
  s.state = state();
  s.mode = static_cast<BreakerMode>(mode_.load(std::memory_order_acquire));
  s.generation = generation_.load(std::memory_order_acquire);
  s.consecutive_failures = consecutive_failures_.load(std::memory_order_relaxed);
  s.drop_probability = s.state == BreakerState::kOpen || s.mode == BreakerMode::kForceOpen ? 1.0 : 0.0;
  s.time_in_state = std::max(
      absl::ZeroDuration(),
      now - absl::FromUnixNanos(state_since_ns_.load(std::memory_order_acquire)));
  SetRates(s);
  return s;
}

}  // namespace resilience
