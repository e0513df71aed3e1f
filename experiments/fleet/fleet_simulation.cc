#include "experiments/fleet/fleet_simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "experiments/fleet/fleet_simulator.h"

namespace fleet {

FleetSimulation::FleetSimulation(const Config& config, const FleetPolicy& policy)
    : config_(config),
      policy_(policy),
      bin_ns_(absl::ToInt64Nanoseconds(config.bin)),
      end_ns_(absl::ToInt64Nanoseconds(RunLength(config))),
      delay_ns_(absl::ToInt64Nanoseconds(config.network_delay)),
      t0_(absl::UnixEpoch() + absl::Hours(24)),
      clock_(t0_),
      random_(config.seed) {
  result_.policy = policy.name;
  result_.config = config;
  result_.bins.resize(static_cast<size_t>((end_ns_ + bin_ns_ - 1) / bin_ns_));
}

void FleetSimulation::Schedule(int64_t t, EventType type, uint32_t a, uint32_t b, int32_t code,
                               int64_t extra) {
  events_.push(Event{t, seq_++, type, code, a, b, extra});
}

Bin& FleetSimulation::BinAt(int64_t t) {
  const size_t i = static_cast<size_t>(std::max<int64_t>(0, t) / bin_ns_);
  return result_.bins[std::min(i, result_.bins.size() - 1)];
}

void FleetSimulation::SetNow(int64_t t) {
  now_ = t;
  clock_.SetTime(t0_ + absl::Nanoseconds(t));
}

RunResult FleetSimulation::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  MakeClients();
  MakeServers();
  if (config_.trigger.kind != TriggerKind::kNone) {
    const int64_t start = absl::ToInt64Nanoseconds(config_.warmup);
    Schedule(start, EventType::kTriggerStart, 0);
    Schedule(start + absl::ToInt64Nanoseconds(config_.trigger.length), EventType::kTriggerEnd, 0);
  }
  Schedule(0, EventType::kArrival, 0);
  int64_t processed = 0;
  // Arrivals stop at the end; every call that arrived runs to its end.
  while (!events_.empty()) {
    const Event e = events_.top();
    events_.pop();
    ++processed;
    SetNow(e.t);
    switch (e.type) {
      case EventType::kArrival:
        OnArrival();
        break;
      case EventType::kDeliver:
        OnDeliver(e.a);
        break;
      case EventType::kWorkDone:
        OnWorkDone(e.a, e.b, e.extra);
        break;
      case EventType::kAnswer:
        OnAnswer(e.a, e.b, static_cast<absl::StatusCode>(e.code), e.extra);
        break;
      case EventType::kAttemptTimeout:
        OnAttemptTimeout(e.a, e.b);
        break;
      case EventType::kRetry:
        StartAttempt(e.a);
        break;
      case EventType::kTriggerStart:
        OnTriggerStart();
        break;
      case EventType::kTriggerEnd:
        OnTriggerEnd();
        break;
    }
  }
  result_.events = processed;
  result_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  Summarize(result_);
  return std::move(result_);
}

absl::StatusOr<RunResult> Simulate(const Config& config, const FleetPolicy& policy) {
  if (absl::Status s = Validate(config); !s.ok()) return s;
  FleetSimulation simulation(config, policy);
  return simulation.Run();
}

}  // namespace fleet
