#include "experiments/goodput/run_recorder.h"

namespace goodput {

RunRecorder::RunRecorder(const std::vector<Period>& schedule, absl::Duration length,
                         uint64_t seed)
    : oracle_(schedule, seed) {
  const int64_t seconds = (absl::ToInt64Milliseconds(length) + 999) / 1000;
  metrics_.successes_per_second.assign(seconds, 0);
  metrics_.offered_per_second.assign(seconds, 0);
}

const Period& RunRecorder::Offer(int64_t tick) {
  const Period& p = oracle_.PeriodAt(tick);
  if (previous_ != nullptr && previous_ != &p && previous_->kind != Period::kHealthy) {
    waiting_since_ = previous_->end;
  }
  previous_ = &p;
  ++metrics_.offered;
  ++metrics_.offered_per_second[tick / 1000];
  if (oracle_.Serve(tick) == absl::StatusCode::kOk) ++metrics_.oracle_succeeded;
  return p;
}

void RunRecorder::RejectedLocally(int64_t tick) {
  const Period& p = Offer(tick);
  ++metrics_.rejected_locally;
  if (p.kind == Period::kHealthy) ++metrics_.rejected_while_healthy;
}

void RunRecorder::Reached(int64_t tick, bool succeeded) {
  const Period& p = Offer(tick);
  if (p.kind != Period::kHealthy) ++metrics_.reached_failing_backend;
  if (!succeeded) {
    ++metrics_.failed;
    return;
  }
  ++metrics_.succeeded;
  ++metrics_.successes_per_second[tick / 1000];
  const absl::Duration t = absl::Milliseconds(tick);
  if (waiting_since_ != absl::InfiniteDuration() && t >= waiting_since_) {
    recovery_total_ += t - waiting_since_;
    ++recoveries_;
    waiting_since_ = absl::InfiniteDuration();
  }
}

Metrics RunRecorder::Finish() const {
  Metrics m = metrics_;
  m.goodput_ratio =
      m.oracle_succeeded > 0 ? static_cast<double>(m.succeeded) / m.oracle_succeeded : 0;
  m.recovery_seconds =
      recoveries_ > 0 ? absl::ToDoubleSeconds(recovery_total_) / recoveries_ : 0;
  return m;
}

}  // namespace goodput
