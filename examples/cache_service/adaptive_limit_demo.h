// File: examples/cache_service/adaptive_limit_demo.h
//
// cache_demo's adaptive-limit section: a server whose Get is a bounded
// backend (BoundedCapacityService) behind `throttle.adaptive`, an open-loop
// load above its capacity, and the backend losing half its workers
// mid-load. Measures where the limit stood and what latency admitted calls
// saw before and after the drop.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_ADAPTIVE_LIMIT_DEMO_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_ADAPTIVE_LIMIT_DEMO_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cache_service {

// What one half of the run (before or after the drop) showed, over its last
// second (once the limit had time to move).
struct AdaptiveLimitHalf {
  int workers = 0;
  double limit = 0;           // mean of the limit, sampled every 50 ms
  double goodput = 0;         // calls answered OK within their deadline, per second
  double rejected = 0;        // RESOURCE_EXHAUSTED with a pushback, per second
  // Latency of the calls not rejected (at most the deadline). p90 is the
  // one a stall of this shared machine cannot move much.
  absl::Duration admitted_p90;
  absl::Duration admitted_p99;
};

struct AdaptiveLimitRun {
  absl::Duration service_time;
  absl::Duration deadline;
  double offered = 0;  // calls per second
  AdaptiveLimitHalf before, after;
  int64_t rejections_without_pushback = 0;
};

// RunAdaptiveLimitDemo()
//
// 16 workers -> 8 workers of 10 ms each (1600 -> 800 calls/s) under 2400
// calls/s with a 100 ms deadline, `half` per part (2 s in the demo).
// Unavailable if the server cannot start.
absl::StatusOr<AdaptiveLimitRun> RunAdaptiveLimitDemo(absl::Duration half = absl::Seconds(2));

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_ADAPTIVE_LIMIT_DEMO_H_
