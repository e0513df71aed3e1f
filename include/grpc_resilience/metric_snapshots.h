/// \file include/grpc_resilience/metric_snapshots.h
///
/// What the library's per-method counters held when they were read, as the
/// client's and the server's stats hand them out: the calls per gRPC status
/// code, and a latency histogram. Plain values; the counters that fill them
/// are internal (src/metrics).

#ifndef GRPC_RESILIENCE_METRIC_SNAPSHOTS_H_
#define GRPC_RESILIENCE_METRIC_SNAPSHOTS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// Calls per status code: one slot per code from OK (0) to UNAUTHENTICATED
/// (16), and one "other" slot for any number outside that range (a peer may
/// send any number in grpc-status). Codes are the numbers of
/// grpc::StatusCode (and absl::StatusCode, which uses the same ones).
struct GRPC_RESILIENCE_EXPORT StatusCodeCountsSnapshot {
  static constexpr size_t kNumCodes = 17;          ///< OK .. UNAUTHENTICATED
  static constexpr size_t kOtherSlot = kNumCodes;  ///< any other number
  static constexpr size_t kNumSlots = kNumCodes + 1;  ///< the codes and kOtherSlot

  /// The label value of a slot: the code's canonical name ("OK",
  /// "DEADLINE_EXCEEDED", ...), "OTHER" for kOtherSlot; "" past the last slot.
  static absl::string_view SlotName(size_t slot);

  /// Indexed by slot: code number, kOtherSlot last.
  std::array<uint64_t, kNumSlots> counts{};

  /// The sum over all slots.
  uint64_t total() const;
};

/// A latency histogram over fixed buckets: 0.5 ms to 10 s in 1-2.5-5 steps,
/// and +Inf.
struct GRPC_RESILIENCE_EXPORT LatencyHistogramSnapshot {
  static constexpr size_t kNumBounds = 14;  ///< finite bounds (UpperBounds())
  static constexpr size_t kNumBuckets = kNumBounds + 1;  ///< with +Inf

  /// The finite bucket bounds in seconds, ascending:
  /// 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10.
  static absl::Span<const double> UpperBounds();

  /// Observations per bucket, not cumulative: bucket_counts[i] counts the
  /// latencies in (bound[i-1], bound[i]] of UpperBounds(); the last element
  /// counts those above the last bound (the +Inf bucket).
  std::array<uint64_t, kNumBuckets> bucket_counts{};
  /// The sum of bucket_counts.
  uint64_t count = 0;
  /// The sum of the observed latencies, in seconds (kept to the microsecond).
  double sum_seconds = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_METRIC_SNAPSHOTS_H_
