// File: experiments/overload/deadline_mix_grpc.h
//
// Deadline-aware admission at 3x capacity over real gRPC (--scenario=deadline):
// a BoundedCapacityService behind the guard, Poisson arrivals on loopback,
// a share of them with a deadline shorter than the service time (they can
// never be answered in time), the rest with an ample one. Each policy in a
// fresh server: a fixed concurrency limit alone, the same with
// throttle.deadlineAdmission, and deadline admission alone; and the
// unloaded p99 of the limited server at 0.3x capacity.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_DEADLINE_MIX_GRPC_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_DEADLINE_MIX_GRPC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace overload {

struct DeadlineMixConfig {
  // Capacity C = workers / service_time: 8 / 20 ms = 400 calls/s (each call
  // takes uniform [0.5, 1.5] x service_time).
  int workers = 8;
  absl::Duration service_time = absl::Milliseconds(20);
  double load = 3;  // x C, Poisson
  // The calls that cannot be served in time: this share, with this deadline.
  double short_fraction = 0.15;
  absl::Duration short_deadline = absl::Milliseconds(15);
  absl::Duration long_deadline = absl::Milliseconds(200);
  absl::Duration duration = absl::Seconds(5);
  // The unloaded reference: this load, long deadlines only.
  double unloaded_load = 0.3;
  absl::Duration unloaded_duration = absl::Seconds(3);
  uint64_t seed = 1;
};

struct DeadlineMixRun {
  std::string policy;
  std::string throttle_json;
  int64_t offered = 0;
  int64_t short_offered = 0;
  int64_t unsent = 0;  // arrivals the generator reached too late (not sent)
  // Answered DEADLINE_EXCEEDED by deadline-aware admission (all / short).
  int64_t refused_deadline = 0;
  int64_t refused_deadline_short = 0;
  int64_t rejected_limit = 0;  // RESOURCE_EXHAUSTED: the concurrency limit
  // Neither refused nor rejected: their handler ran.
  int64_t admitted = 0;
  int64_t admitted_short = 0;
  // Of the admitted short calls, those that arrived in the first second
  // (before the method had its minimum of service times).
  int64_t admitted_short_first_second = 0;
  int64_t admitted_deadline_exceeded = 0;  // admitted, ended DEADLINE_EXCEEDED
  int64_t ok_in_deadline = 0;
  double goodput_per_second = 0;
  // The client's latency of admitted calls.
  double admitted_p50_ms = 0;
  double admitted_p99_ms = 0;
};

struct DeadlineMixResult {
  DeadlineMixConfig config;
  double capacity_per_second = 0;
  double unloaded_p99_ms = 0;
  std::vector<DeadlineMixRun> runs;
};

// RunDeadlineMixGrpc()
//
// The unloaded run, then each policy (about 3 s + 3 x 5 s in all).
absl::StatusOr<DeadlineMixResult> RunDeadlineMixGrpc(const DeadlineMixConfig& config);

std::string DeadlineMixToTable(const DeadlineMixResult& result);
std::string DeadlineMixToJson(const DeadlineMixResult& result);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_DEADLINE_MIX_GRPC_H_
