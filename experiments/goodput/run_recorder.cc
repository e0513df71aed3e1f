#include "experiments/goodput/run_recorder.h"

#include <algorithm>

namespace goodput {

RunRecorder::RunRecorder(const std::vector<Period>& schedule, absl::Duration length,
                         uint64_t seed)
    : schedule_(schedule), oracle_(schedule, seed) {
  const int64_t seconds = (absl::ToInt64Milliseconds(length) + 999) / 1000;
  metrics_.successes_per_second.assign(seconds, 0);
  metrics_.offered_per_second.assign(seconds, 0);
}

const Period& RunRecorder::Offer(int64_t tick, bool succeeded) {
  const Period& p = oracle_.PeriodAt(tick);
  ++metrics_.offered;
  ++metrics_.offered_per_second[tick / 1000];
  const bool oracle_ok = oracle_.Serve(tick) == absl::StatusCode::kOk;
  if (oracle_ok) ++metrics_.oracle_succeeded;
  calls_.push_back(Call{tick, succeeded, oracle_ok, false});
  return p;
}

void RunRecorder::RejectedLocally(int64_t tick) {
  const Period& p = Offer(tick, false);
  calls_.back().rejected = true;
  ++metrics_.rejected_locally;
  if (p.kind == Period::kHealthy) ++metrics_.rejected_while_healthy;
}

void RunRecorder::Reached(int64_t tick, bool succeeded) {
  const Period& p = Offer(tick, succeeded);
  if (p.kind != Period::kHealthy) ++metrics_.reached_failing_backend;
  if (!succeeded) {
    ++metrics_.failed;
    return;
  }
  ++metrics_.succeeded;
  ++metrics_.successes_per_second[tick / 1000];
}

Recovery RecoveryTimes(const Period& healthy, const std::vector<int64_t>& ticks,
                       const std::vector<bool>& succeeded,
                       const std::vector<bool>& oracle_succeeded, int64_t window_calls) {
  const absl::Duration length = healthy.end - healthy.start;
  Recovery r{length, length};
  const int64_t n = static_cast<int64_t>(ticks.size());
  if (n == 0) return r;
  // From the period's first call (at low rates it starts up to a call's
  // spacing after the period).
  auto since_start = [&](int64_t i) { return absl::Milliseconds(ticks[i] - ticks[0]); };
  for (int64_t i = 0; i < n; ++i) {
    if (succeeded[i]) {
      r.first_success = since_start(i);
      break;
    }
  }
  // Prefix sums of both success counts.
  std::vector<int64_t> ok(n + 1, 0), oracle(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    ok[i + 1] = ok[i] + (succeeded[i] ? 1 : 0);
    oracle[i + 1] = oracle[i] + (oracle_succeeded[i] ? 1 : 0);
  }
  const int64_t w = std::min(window_calls, n);
  int64_t last_bad = -1;  // start of the last window below 99%
  for (int64_t j = 0; j + w <= n; ++j) {
    const int64_t got = ok[j + w] - ok[j];
    const int64_t could = oracle[j + w] - oracle[j];
    if (static_cast<double>(got) < 0.99 * static_cast<double>(could)) last_bad = j;
  }
  if (last_bad < 0) {
    r.back_to_99 = since_start(0);
  } else if (last_bad < n - w) {
    r.back_to_99 = since_start(last_bad + 1);
  }  // else: the last window is below 99%: censored at the period's length
  return r;
}

Metrics RunRecorder::Finish() const {
  Metrics m = metrics_;
  m.per_call.reserve(calls_.size());
  for (const Call& c : calls_) m.per_call.push_back(c.rejected ? 'r' : c.succeeded ? 's' : 'f');
  m.goodput_ratio =
      m.oracle_succeeded > 0 ? static_cast<double>(m.succeeded) / m.oracle_succeeded : 0;
  // Windows of 100 ms of calls, at least 10 calls (the rate is that of the
  // run: its calls are evenly spaced).
  int64_t window_calls = 10;
  if (calls_.size() >= 2) {
    const int64_t spacing = std::max<int64_t>(1, calls_[1].tick - calls_[0].tick);
    window_calls = std::max<int64_t>(10, 100 / spacing);
  }
  for (size_t i = 0; i + 1 < schedule_.size(); ++i) {
    const Period& next = schedule_[i + 1];
    if (schedule_[i].kind == Period::kHealthy || next.kind != Period::kHealthy) continue;
    const int64_t from = absl::ToInt64Milliseconds(next.start);
    const int64_t to = absl::ToInt64Milliseconds(next.end);
    auto a = std::lower_bound(calls_.begin(), calls_.end(), from,
                              [](const Call& c, int64_t t) { return c.tick < t; });
    auto b = std::lower_bound(a, calls_.end(), to,
                              [](const Call& c, int64_t t) { return c.tick < t; });
    if (a == b) continue;
    std::vector<int64_t> ticks;
    std::vector<bool> ok, oracle;
    for (auto it = a; it != b; ++it) {
      ticks.push_back(it->tick);
      ok.push_back(it->succeeded);
      oracle.push_back(it->oracle_succeeded);
    }
    const Recovery r = RecoveryTimes(next, ticks, ok, oracle, window_calls);
    m.first_success_per_outage.push_back(absl::ToDoubleSeconds(r.first_success));
    m.recovery99_per_outage.push_back(absl::ToDoubleSeconds(r.back_to_99));
  }
  m.SummarizeRecoveries();
  return m;
}

}  // namespace goodput
