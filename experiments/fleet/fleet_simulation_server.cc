// The servers of FleetSimulation: the throttle (the library's concurrency
// limiter, as ThrottleStage runs it), a FIFO queue, workers, and the
// triggers that change them.

#include <algorithm>

#include "experiments/fleet/fleet_simulation.h"

namespace fleet {

using resilience::Outcome;

void FleetSimulation::MakeServers() {
  servers_.resize(static_cast<size_t>(config_.servers));
  for (Server& s : servers_) ResetServerState(s);
}

// A server (re)starting: a new limiter and a new duration estimate, as a
// new process builds them from its policy.
void FleetSimulation::ResetServerState(Server& s) {
  s.busy = 0;
  s.queue.clear();
  s.durations = std::make_unique<resilience::CallDurationEstimate>();
  s.limiter.reset();
  if (policy_.server_throttle.has_value()) {
    s.limiter = resilience::CreateConcurrencyLimiter(*policy_.server_throttle, clock_);
  }
}

double FleetSimulation::Speed() const {
  if (!trigger_on_) return 1.0;
  const Trigger& t = config_.trigger;
  switch (t.kind) {
    case TriggerKind::kCapacityHalf:
      return 0.5;
    case TriggerKind::kColdCache: {
      const double into = static_cast<double>(now_) - absl::ToDoubleNanoseconds(config_.warmup);
      const double frac = std::clamp(into / absl::ToDoubleNanoseconds(t.length), 0.0, 1.0);
      return t.cold_capacity + (1.0 - t.cold_capacity) * frac;
    }
    default:
      return 1.0;
  }
}

int64_t FleetSimulation::ExtraLatency() const {
  if (!trigger_on_ || config_.trigger.kind != TriggerKind::kLatencySpike) return 0;
  return absl::ToInt64Nanoseconds(config_.trigger.extra_latency);
}

void FleetSimulation::OnDeliver(uint32_t id) {
  Attempt& a = attempts_[id];
  Server& s = servers_[static_cast<size_t>(a.server)];
  if (s.down) {  // connection refused
    a.server_open = false;
    Answer(now_ + delay_ns_, id, absl::StatusCode::kUnavailable);
    return;
  }
  if (s.limiter != nullptr && !s.limiter->TryAcquire()) {
    // ThrottleStage::Admit() and Reject(): RESOURCE_EXHAUSTED with the
    // expected call duration as pushback, clamped, in whole milliseconds.
    ++BinAt(now_).rejected_by_server;
    a.server_open = false;
    const resilience::ThrottleSettings& t = *policy_.server_throttle;
    const absl::Time now = clock_.Now();
    absl::Duration pushback = std::clamp(s.durations->Expected(now), t.min_pushback, t.max_pushback);
    pushback = absl::Ceil(pushback, absl::Milliseconds(1));
    Answer(now_ + delay_ns_ + ExtraLatency(), id, absl::StatusCode::kResourceExhausted,
           absl::ToInt64Nanoseconds(pushback));
    return;
  }
  a.admitted_at = now_;
  s.durations->Started(clock_.Now());
  if (s.busy < config_.workers) {
    StartWork(static_cast<uint32_t>(a.server), id);
  } else {
    s.queue.push_back(id);
  }
}

void FleetSimulation::StartWork(uint32_t server, uint32_t id) {
  Server& s = servers_[server];
  ++s.busy;
  const double service_ns =
      absl::ToDoubleNanoseconds(config_.service_time) * (0.5 + random_.NextUniform()) / Speed();
  Schedule(now_ + std::max<int64_t>(1, static_cast<int64_t>(service_ns)), EventType::kWorkDone,
           server, id, 0, s.epoch);
}

void FleetSimulation::OnWorkDone(uint32_t server, uint32_t id, int64_t epoch) {
  Server& s = servers_[server];
  if (epoch != s.epoch) return;  // the server died meanwhile; the attempt was answered then
  --s.busy;
  Attempt& a = attempts_[id];
  a.server_open = false;
  const absl::Duration ran = absl::Nanoseconds(now_ - a.admitted_at);
  // ThrottleStage::Finish(): an answer at or past the call's deadline
  // reached nobody (kExpired); otherwise it was answered.
  if (now_ >= a.deadline) {
    ++BinAt(now_).wasted;
    if (s.limiter != nullptr) s.limiter->ReleaseExpired(ran);
    MaybeFree(id);
  } else {
    if (s.limiter != nullptr) s.limiter->Release(Outcome::kSuccess, ran);
    s.durations->Finished(ran);
    Answer(now_ + delay_ns_ + ExtraLatency(), id, absl::StatusCode::kOk);
  }
  if (!s.queue.empty() && s.busy < config_.workers) {
    const uint32_t next = s.queue.front();
    s.queue.pop_front();
    StartWork(server, next);
  }
}

void FleetSimulation::OnTriggerStart() {
  trigger_on_ = true;
  if (config_.trigger.kind != TriggerKind::kOutage) return;
  // Every server dies: whatever it held is lost, its clients see the
  // connection reset (UNAVAILABLE), its limiter and estimates are gone.
  for (size_t i = 0; i < servers_.size(); ++i) {
    Server& s = servers_[i];
    s.down = true;
    ++s.epoch;
    s.busy = 0;
    s.queue.clear();
    s.limiter.reset();
  }
  for (uint32_t id = 0; id < attempts_.size(); ++id) {
    Attempt& a = attempts_[id];
    if (!a.in_use || !a.server_open) continue;
    a.server_open = false;
    if (a.client_open) {
      Answer(now_ + delay_ns_, id, absl::StatusCode::kUnavailable);
    } else {
      MaybeFree(id);
    }
  }
}

void FleetSimulation::OnTriggerEnd() {
  trigger_on_ = false;
  if (config_.trigger.kind != TriggerKind::kOutage) return;
  for (Server& s : servers_) {
    s.down = false;
    ResetServerState(s);
  }
}

}  // namespace fleet
