// The clients of FleetSimulation: open-loop arrivals, attempts through the
// breaker, answers and timeouts through the retry decider.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "experiments/fleet/fleet_simulation.h"

namespace fleet {

using resilience::AttemptOutcome;
using resilience::LocalEnd;
using resilience::RetryDecision;
using resilience::RetryVerdict;

void FleetSimulation::MakeClients() {
  clients_.resize(static_cast<size_t>(config_.clients));
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& c = clients_[i];
    const uint64_t seed = config_.seed * 0x9E3779B97F4A7C15ULL + i + 1;
    c.random = std::make_unique<resilience::SplitMixRandom>(seed);
    resilience::RetryDecider::Options retry = policy_.retry;
    retry.clock = &clock_;  // a windowed retryBudget's
    if (policy_.throttle.has_value()) {
      c.throttle = std::make_unique<resilience::RetryBudget>(policy_.throttle->max_tokens,
                                                             policy_.throttle->token_ratio);
      retry.throttle = c.throttle.get();
    }
    c.decider = std::make_unique<resilience::RetryDecider>(retry, *c.random);
    c.breaker = resilience::CreateBreaker(policy_.breaker, clock_, seed);
    // As ClientResilienceImpl::MakeEndpointBreakers(): each server's breaker
    // made from the method's settings.
    if (c.breaker != nullptr && policy_.breaker.per_endpoint) {
      resilience::EndpointBreakers::Options options = policy_.breaker.endpoints;
      options.make = [this, seed](resilience::BreakerListener) {
        return resilience::CreateBreaker(policy_.breaker, clock_, seed);
      };
      c.endpoints = std::make_unique<resilience::EndpointBreakers>(std::move(options), clock_);
    }
    // Each client starts its round robin at its own server.
    c.next_server = static_cast<int>(i % static_cast<size_t>(config_.servers));
  }
}

void FleetSimulation::OnArrival() {
  if (now_ >= end_ns_) return;
  const double rate = config_.load * Capacity(config_);
  const int64_t gap = static_cast<int64_t>(-std::log(1.0 - random_.NextUniform()) / rate * 1e9);
  Schedule(now_ + std::max<int64_t>(1, gap), EventType::kArrival, 0);
  uint32_t id;
  if (!free_calls_.empty()) {
    id = free_calls_.back();
    free_calls_.pop_back();
  } else {
    id = static_cast<uint32_t>(calls_.size());
    calls_.emplace_back();
  }
  Call& call = calls_[id];
  call.client = static_cast<uint32_t>(
      std::min<double>(random_.NextUniform() * config_.clients, config_.clients - 1));
  call.deadline = now_ + absl::ToInt64Nanoseconds(policy_.timeout);
  call.attempts = 0;
  call.bin = static_cast<size_t>(now_ / bin_ns_);
  ++BinAt(now_).offered;
  StartAttempt(id);
}

uint32_t FleetSimulation::NewAttempt() {
  if (!free_attempts_.empty()) {
    const uint32_t id = free_attempts_.back();
    free_attempts_.pop_back();
    ++attempts_[id].gen;
    return id;
  }
  attempts_.emplace_back();
  return static_cast<uint32_t>(attempts_.size() - 1);
}

void FleetSimulation::MaybeFree(uint32_t id) {
  Attempt& a = attempts_[id];
  if (!a.in_use || a.client_open || a.server_open) return;
  a.in_use = false;
  free_attempts_.push_back(id);
}

void FleetSimulation::StartAttempt(uint32_t call_id) {
  Call& call = calls_[call_id];
  Client& client = clients_[call.client];
  ++call.attempts;
  resilience::Admission admission = Admit(client);
  if (!admission.admitted()) {
    ++BinAt(now_).refused_locally;
    AttemptOutcome outcome;
    outcome.code = absl::StatusCode::kUnavailable;  // as the client chain answers it
    outcome.rejected_locally = true;
    Decide(call_id, outcome);
    return;
  }
  const uint32_t id = NewAttempt();
  Attempt& a = attempts_[id];
  a.call = call_id;
  a.server = client.next_server;
  client.next_server = (client.next_server + 1) % config_.servers;
  a.sent = now_;
  a.deadline = call.deadline;
  a.per_attempt = false;
  if (policy_.per_attempt_timeout.has_value()) {
    const int64_t own = now_ + absl::ToInt64Nanoseconds(*policy_.per_attempt_timeout);
    if (own < call.deadline) {
      a.deadline = own;
      a.per_attempt = true;
    }
  }
  a.in_use = true;
  a.client_open = true;
  a.server_open = true;
  a.admission = std::move(admission);
  ++BinAt(now_).attempts;
  Schedule(now_ + delay_ns_, EventType::kDeliver, id);
  Schedule(a.deadline, EventType::kAttemptTimeout, id, a.gen);
}

resilience::Admission FleetSimulation::Admit(Client& client) {
  if (client.breaker == nullptr) return resilience::Admission();
  resilience::Admission admission = client.breaker->Allow();
  if (admission.admitted() || client.endpoints == nullptr ||
      admission.reason() == resilience::RejectReason::kForcedOpen ||
      client.endpoints->ServiceFailing()) {
    return admission;
  }
  return resilience::Admission::Waived(clock_.Now());
}

void FleetSimulation::RecordOutcome(Attempt& a, absl::StatusCode code, LocalEnd end, int endpoint) {
  if (!a.admission.pending() && !a.admission.waived()) return;
  resilience::Outcome outcome = policy_.breaker.Classify(code, end);
  const absl::Duration latency = absl::Nanoseconds(now_ - a.sent);
  Client& client = clients_[calls_[a.call].client];
  if (client.endpoints != nullptr &&
      !client.endpoints->Record(endpoint < 0 ? std::string() : absl::StrCat("server-", endpoint),
                                outcome, latency)) {
    outcome = resilience::Outcome::kNeutral;
  }
  a.admission.Record(outcome, latency);  // nothing for a waived one
}

void FleetSimulation::Answer(int64_t t, uint32_t id, absl::StatusCode code, int64_t pushback_ns) {
  Schedule(t, EventType::kAnswer, id, attempts_[id].gen, static_cast<int32_t>(code), pushback_ns);
}

void FleetSimulation::OnAnswer(uint32_t id, uint32_t gen, absl::StatusCode code,
                               int64_t pushback_ns) {
  Attempt& a = attempts_[id];
  if (!a.in_use || a.gen != gen || !a.client_open) return;  // the client gave up on it already
  a.client_open = false;
  // A server's answer names it as the attempt's peer; UNAVAILABLE here is a
  // refused or reset connection (a server down), which names none.
  RecordOutcome(a, code, LocalEnd::kNone, code == absl::StatusCode::kUnavailable ? -1 : a.server);
  AttemptOutcome outcome;
  outcome.code = code;
  if (pushback_ns >= 0) {
    outcome.pushback.kind = resilience::Pushback::Kind::kDelay;
    outcome.pushback.delay = absl::Nanoseconds(pushback_ns);
  }
  const uint32_t call = a.call;
  MaybeFree(id);
  Decide(call, outcome);
}

void FleetSimulation::OnAttemptTimeout(uint32_t id, uint32_t gen) {
  Attempt& a = attempts_[id];
  if (!a.in_use || a.gen != gen || !a.client_open) return;
  a.client_open = false;
  const LocalEnd end = a.per_attempt ? LocalEnd::kPerAttemptTimeout : LocalEnd::kCallDeadline;
  // No answer came back: gRPC names no peer (docs/endpoint-breakers.md).
  RecordOutcome(a, absl::StatusCode::kDeadlineExceeded, end, -1);
  AttemptOutcome outcome;
  outcome.code = absl::StatusCode::kDeadlineExceeded;
  outcome.deadline_passed = true;
  outcome.per_attempt_deadline = a.per_attempt;
  const uint32_t call = a.call;
  MaybeFree(id);
  Decide(call, outcome);
}

void FleetSimulation::Decide(uint32_t call_id, const AttemptOutcome& outcome) {
  Call& call = calls_[call_id];
  const RetryDecision d = clients_[call.client].decider->Decide(
      call.attempts, outcome, clock_.WallNow(), t0_ + absl::Nanoseconds(call.deadline));
  switch (d.verdict) {
    case RetryVerdict::kSucceeded:
      FinishCall(call_id, now_ <= call.deadline);
      return;
    case RetryVerdict::kRetry:
      Schedule(now_ + absl::ToInt64Nanoseconds(d.delay), EventType::kRetry, call_id);
      return;
    default:
      FinishCall(call_id, false);
      return;
  }
}

void FleetSimulation::FinishCall(uint32_t call_id, bool succeeded) {
  if (succeeded) ++result_.bins[std::min(calls_[call_id].bin, result_.bins.size() - 1)].succeeded;
  free_calls_.push_back(call_id);
}

}  // namespace fleet
