// File: experiments/overload/retry_storm_grpc.h
//
// The retry part of the overload experiment, over real gRPC: a pool of
// clients that retry naively (gRPC's own retryPolicy, 3 attempts,
// RESOURCE_EXHAUSTED retryable, no retryThrottling, so every retry carries
// grpc-previous-rpc-attempts) offers `load` x C Poisson to a server whose
// throttle is the same limit with and without
// throttle.retryShedding, and with its doNotRetry; a run without retries
// shows what the retries cost. Figures per server: goodput (calls answered
// OK within their deadline per second, and as a share of C), the calls that
// ended rejected or late, and the attempts the server saw per call.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_RETRY_STORM_GRPC_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_RETRY_STORM_GRPC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace overload {

struct RetryStormConfig {
  // The backend: C = workers / service_time (400 calls/s).
  int workers = 8;
  absl::Duration service_time = absl::Milliseconds(20);
  // Each call's deadline, all of its attempts together (gRPC's retry).
  absl::Duration deadline = absl::Milliseconds(100);
  absl::Duration duration = absl::Seconds(10);
  double load = 2.0;  // offered calls, x C
  uint64_t seed = 1;
};

// One server (a throttle) against one client pool.
struct RetryStormServer {
  std::string name;
  std::string throttle_json;
  int max_attempts = 3;  // the clients' retryPolicy; 1: no retries
};

struct RetryStormRun {
  std::string server;
  int max_attempts = 3;
  int64_t offered = 0;         // calls sent
  int64_t ok_in_deadline = 0;  // answered OK within the deadline
  int64_t rejected = 0;        // ended RESOURCE_EXHAUSTED (every attempt refused)
  int64_t late = 0;            // anything else: past the deadline, or failed
  int64_t unsent = 0;          // arrivals the load generator reached too late
  // As the server counted them: attempts let through, refused by the
  // concurrency limit, by the rate limit, as retries (throttle.retryShedding).
  int64_t admitted = 0;
  int64_t rejected_concurrency = 0;
  int64_t rejected_rate = 0;
  int64_t rejected_retry = 0;
  double goodput_per_second = 0;
  double goodput_of_capacity = 0;  // goodput / C
  std::string load_average;       // /proc/loadavg's first three fields after the run
};

struct RetryStormResult {
  RetryStormConfig config;
  std::vector<RetryStormRun> runs;
};

// The servers compared: the concurrency limit of 2 x workers (room for a
// queue of one service time) without retries; then, with naive retries,
// for that limit ("fixed"), the adaptive gradient limit ("adaptive") and a
// rate limit at 0.9 C ("rate"): today's throttle, with retryShedding, and with
// retryShedding and doNotRetry.
std::vector<RetryStormServer> RetryStormServers(const RetryStormConfig& config);

// RunRetryStorm()
//
// Each server once, a fresh server and channel each, the same seeded
// arrivals. InvalidArgument naming the server if its policy does not load;
// the server's error if it cannot start.
absl::StatusOr<RetryStormResult> RunRetryStorm(const RetryStormConfig& config,
                                               const std::vector<RetryStormServer>& servers);

// The runs as a table (one line each) and as JSON.
std::string RetryStormToTable(const RetryStormResult& result);
std::string RetryStormToJson(const RetryStormResult& result);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_RETRY_STORM_GRPC_H_
