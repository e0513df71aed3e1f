// File: experiments/fleet/fleet_config.h
//
// What one run of the fleet simulator (issue 33) is made of: the fleet
// (clients, servers, their capacity), the offered load, the trigger that
// disturbs it, and the policy every client and server runs.
//
// The fleet: `servers` servers, each with `workers` workers taking a service
// time uniform in [0.5, 1.5] x `service_time` (capacity C = servers x
// workers / service_time calls per second), FIFO queue in front, unbounded;
// a server runs every call it admitted to its end, whether or not its client
// still waits (a handler that never checks its deadline), so calls queued
// past their deadline are wasted work. `clients` clients send open-loop
// (Poisson, `load` x C calls per second in all), each to its servers in
// turn (round robin), each with its own retry decider, retry budget and
// throttle, and breaker, all the library's core classes on one simulated
// clock.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_CONFIG_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace fleet {

// A trigger: what disturbs the fleet for a while.
//   kLatencySpike: every answer is `extra_latency` later (a network or a
//     dependency slowing down that costs the server nothing);
//   kCapacityHalf: every server works at half speed;
//   kOutage: every server is down (connections refused, work in flight lost,
//     server state lost);
//   kColdCache: every server works at `cold_capacity` of its speed at the
//     start, ramping back linearly to full speed at the end (a cache refilling).
enum class TriggerKind { kNone, kLatencySpike, kCapacityHalf, kOutage, kColdCache };

struct Trigger {
  TriggerKind kind = TriggerKind::kNone;
  absl::Duration length = absl::Seconds(5);
  absl::Duration extra_latency = absl::Milliseconds(300);  // kLatencySpike
  double cold_capacity = 0.25;                              // kColdCache
};

// "none", "latency_spike", "capacity_half", "outage", "cold_cache".
std::string TriggerName(TriggerKind kind);

// The four triggers of the issue: a latency spike of +300 ms for 5 s,
// capacity halved for 10 s, a full outage of 5 s, a cold cache ramping from
// 1/4 to full capacity over 10 s.
std::vector<Trigger> StandardTriggers();

struct Config {
  int clients = 1000;
  int servers = 10;
  int workers = 8;
  absl::Duration service_time = absl::Milliseconds(10);
  // One way, each direction.
  absl::Duration network_delay = absl::Microseconds(500);
  // Offered load, x C.
  double load = 0.5;
  // The trigger starts `warmup` into the run; the run goes on `after` past
  // its end.
  Trigger trigger;
  absl::Duration warmup = absl::Seconds(10);
  absl::Duration after = absl::Seconds(40);
  // Width of the time series' bins.
  absl::Duration bin = absl::Milliseconds(500);
  uint64_t seed = 1;
};

// Calls per second the fleet can serve at full speed.
double Capacity(const Config& config);

// The run's length: warmup + trigger + after.
absl::Duration RunLength(const Config& config);

// InvalidArgument naming the field when `config` cannot be run.
absl::Status Validate(const Config& config);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_CONFIG_H_
