#include "src/breaker/recovery_probe.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

absl::Status CheckDuration(absl::string_view field, absl::Duration d) {
  if (d >= absl::Milliseconds(1) && d <= absl::Hours(1)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("recovery_probe.", field,
                                                 ": must be in [1ms, 1h], got ",
                                                 absl::FormatDuration(d)));
}

}  // namespace

absl::Status RecoveryProbe::Validate(const Options& options) {
  if (absl::Status s = CheckDuration("interval", options.interval); !s.ok()) return s;
  return CheckDuration("timeout", options.timeout);
}

RecoveryProbe::RecoveryProbe(const Options& options, ThreeStateBreaker& breaker, Clock& clock)
    : options_(options), breaker_(breaker), clock_(clock) {}

void RecoveryProbe::OnCallFailed() {
  MutexLock lock(&mu_);
  failure_seen_ = true;
}

bool RecoveryProbe::WantedLocked() {
  if (in_flight_) return false;
  return failure_seen_ || breaker_.state() == BreakerState::kOpen;
}

bool RecoveryProbe::StartIfDue() {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  if (!WantedLocked() || now - last_start_ < options_.interval) return false;
  in_flight_ = true;
  failure_seen_ = false;
  last_start_ = now;
  ++stats_.probes;
  return true;
}

absl::Duration RecoveryProbe::TimeUntilDue() {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  if (!WantedLocked()) return absl::InfiniteDuration();
  return std::max(absl::ZeroDuration(), last_start_ + options_.interval - now);
}

void RecoveryProbe::OnAnswer(Answer answer) {
  ThreeStateBreaker::Health health = ThreeStateBreaker::Health::kUnknown;
  {
    MutexLock lock(&mu_);
    if (!in_flight_) return;  // no probe started: nothing to answer
    in_flight_ = false;
    switch (answer) {
      case Answer::kServing:
        ++stats_.serving;
        health = ThreeStateBreaker::Health::kServing;
        break;
      case Answer::kNotServing:
        ++stats_.not_serving;
        health = ThreeStateBreaker::Health::kNotServing;
        break;
      case Answer::kUnreachable:
        ++stats_.unreachable;
        health = ThreeStateBreaker::Health::kNotServing;
        break;
      case Answer::kUnknown:
        ++stats_.unknown;
        break;
    }
  }
  // Outside mu_: the breaker notifies its listener from here.
  breaker_.OnHealth(health);
}

RecoveryProbe::Stats RecoveryProbe::stats() {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace resilience
