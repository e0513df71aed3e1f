// File: src/routing/endpoint_estimate.h
//
// What EndpointPicker (src/routing/endpoint_picker.h) estimates of one
// endpoint: its latency, error share and reported load, how they decay and
// age toward the other endpoints', its slow-start weight, and the cost a
// pick compares. The arithmetic of the picker, apart from the choosing.

#ifndef GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_ESTIMATE_H_
#define GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_ESTIMATE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/time/time.h"

namespace resilience {

// EndpointEstimate
//
// Times are nanoseconds since the Unix epoch on the picker's clock. Not
// thread-safe: the picker keeps one per endpoint, under its lock.
struct EndpointEstimate {
  // EndpointPicker::Options in the units of the arithmetic: absl's Duration
  // conversions cost more than the rest of a pick.
  struct Tuning {
    int64_t slow_start_ns;
    int64_t latency_decay_ns;
    int64_t error_decay_ns;
    double latency_decay_s;
    double error_decay_s;
    double failure_latency_s;
    double initial_latency_s;
  };

  // Every current endpoint's raw estimates, summed: an estimate with no
  // sample yet or not refreshed for a while takes (or moves toward) the
  // mean of the others'.
  struct Totals {
    double latency = 0;
    int latencies = 0;
    double error = 0;
    int errors = 0;
    double load = 0;
    int loads = 0;
  };

  // What a cost is made of, now.
  struct Estimates {
    double latency = 0;  // seconds
    double error_share = 0;
    double load = 0;
    double weight = 1;
  };

  // ramp_from when there is no slow start.
  static constexpr int64_t kFullWeight = std::numeric_limits<int64_t>::min();
  // A decayed weight below this is no sample left.
  static constexpr double kNoWeight = 1e-12;
  // The least latency estimate a cost uses, in seconds: zero-latency samples
  // (a simulated server, a clock that did not move) must not make the calls
  // in flight count for nothing.
  static constexpr double kLeastLatency = 1e-6;
  // The lowest 1 - error share and 1 - load the factors divide by: an
  // endpoint failing every attempt costs 2500 times a healthy one's
  // (1 / 0.02^2), one reporting full load 20 times.
  static constexpr double kLeastSuccessShare = 0.02;
  static constexpr double kLeastHeadroom = 0.05;

  // Start of the slow start (kFullWeight: none).
  int64_t ramp_from = kFullWeight;
  int in_flight = 0;
  // Peak EWMA of the latency: the sum of the samples (seconds) and of their
  // weights exp(-age / latency_decay), as of latency_at. A weighted mean
  // rather than "estimate += alpha * (x - estimate)", so that samples ending
  // at the same instant each count. No weight: no sample.
  double latency_sum = 0;
  double latency_weight = 0;
  int64_t latency_at = 0;
  // The error share: failures over attempts, each weighted
  // exp(-age / error_decay).
  double failures = 0;
  double attempts = 0;
  int64_t errors_at = 0;
  // The last reported utilization, and our calls in flight there when it
  // was written (the reporting one included).
  std::optional<double> load;
  int load_calls = 1;
  int64_t load_at = 0;

  bool HasLatency() const { return latency_weight > kNoWeight; }
  bool HasErrors() const { return attempts > kNoWeight; }
  double OwnLatency() const { return latency_sum / latency_weight; }
  double OwnErrorShare() const { return failures / attempts; }

  // Back to no sample and no report (the endpoint rejoined).
  void Reset() {
    latency_sum = latency_weight = failures = attempts = 0;
    load.reset();
  }

  // Adds the raw estimates this endpoint has to `totals`.
  void AddTo(Totals& totals) const;

  // Whether the latency or error estimate is ageing (Record() then starts
  // from the aged values, as a pick saw them).
  bool Ageing(int64_t now, const Tuning& t) const {
    return (HasLatency() && now - latency_at > t.latency_decay_ns) ||
           (HasErrors() && now - errors_at > t.error_decay_ns);
  }

  // Whether Now() needs the others' estimates.
  bool NeedsOthers(int64_t now, const Tuning& t) const {
    return !HasLatency() || Ageing(now, t) ||
           (load.has_value() && now - load_at > t.latency_decay_ns);
  }

  // The aged latency and error estimates made the raw ones.
  void SettleAgeing(int64_t now, const Tuning& t, const Totals& totals);

  // The estimates at `now`; `totals` may be null when !NeedsOthers().
  Estimates Now(int64_t now, const Tuning& t, const Totals* totals) const;

  // The cost of one more call here: grows with the calls in flight, the
  // latency, the error share and the load; shrinks with the weight.
  double Cost(const Estimates& e) const {
    const double success = std::max(kLeastSuccessShare, 1 - e.error_share);
    const double headroom = std::max(kLeastHeadroom, 1 - e.load);
    return (in_flight + 1) * std::max(kLeastLatency, e.latency) / (success * success) / headroom /
           e.weight;
  }

  // An attempt that ended at `now` after `latency`, failed or not.
  void Record(int64_t now, absl::Duration latency, bool failed, const Tuning& t);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_ESTIMATE_H_
