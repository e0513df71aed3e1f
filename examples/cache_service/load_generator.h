// File: examples/cache_service/load_generator.h
//
// A closed-loop load generator for cache.v1.CacheService, used by
// `cache_client load` and the demo: `concurrency` workers each issue one call
// at a time (Get or Store on a random key) until the call count or the
// duration is reached, and the report gives counts per status code and
// latency percentiles.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_LOAD_GENERATOR_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_LOAD_GENERATOR_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"

namespace cache_service {

struct LoadOptions {
  // Calls to make in total; 0 = no limit (then `duration` must be set).
  // Defaults to 1000.
  int64_t calls = 1000;
  // Calls in flight at once (one per worker thread). 1..1024. Defaults to 4.
  int concurrency = 4;
  // Stop after this long; zero = no limit. Defaults to zero.
  absl::Duration duration = absl::ZeroDuration();
  // Keys are "key-0" .. "key-<key_space - 1>". > 0. Defaults to 1000.
  int64_t key_space = 1000;
  // Bytes per stored value. Defaults to 100.
  int64_t value_size = 100;
  // Share of calls that are Get (the rest are Store), in [0, 1]. Defaults to 0.8.
  double get_fraction = 0.8;
  // Deadline of each call, from its start. > 0; absl::InfiniteDuration() sets
  // none (then only a policy's `timeout` bounds the call). Defaults to 1 s.
  absl::Duration call_timeout = absl::Seconds(1);
  // Seed of the key and method choice, so runs are repeatable. Defaults to 1.
  uint64_t seed = 1;
};

// Everything a run observed.
struct LoadReport {
  static constexpr int kNumCodes = 17;  // gRPC codes 0..16

  int64_t calls = 0;
  absl::Duration elapsed;
  std::array<int64_t, kNumCodes> by_code{};
  std::vector<absl::Duration> sorted_latencies;

  int64_t count(grpc::StatusCode code) const { return by_code[static_cast<int>(code)]; }

  // Percentile()
  //
  // The latency at quantile `q` in [0, 1] (nearest rank); zero when no call
  // was made.
  absl::Duration Percentile(double q) const;

  // Format()
  //
  // A few human-readable lines: totals, counts per code, p50/p90/p99/max.
  std::string Format() const;
};

// Live progress, reported about every 200 ms while a run is going.
struct LoadProgress {
  int64_t done = 0;
  int64_t ok = 0;
  absl::Duration elapsed;
};

// ValidateLoadOptions()
//
// OK, or InvalidArgument naming the field and the value.
absl::Status ValidateLoadOptions(const LoadOptions& options);

// RunLoad()
//
// Runs the load on `stub` (which must be thread-safe, as generated stubs are)
// and blocks until it is done. `on_progress`, if set, is called from a
// separate thread. `options` must pass ValidateLoadOptions().
LoadReport RunLoad(cache::v1::CacheService::StubInterface& stub, const LoadOptions& options,
                   const std::function<void(const LoadProgress&)>& on_progress = nullptr);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_LOAD_GENERATOR_H_
