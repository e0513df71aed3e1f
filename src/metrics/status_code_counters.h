// File: src/metrics/status_code_counters.h
//
// One counter per gRPC status code, for the grpc_code label of the calls
// metrics, without gRPC: codes are the numbers of grpc::StatusCode (and
// absl::StatusCode, which uses the same ones).

#ifndef GRPC_RESILIENCE_SRC_METRICS_STATUS_CODE_COUNTERS_H_
#define GRPC_RESILIENCE_SRC_METRICS_STATUS_CODE_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "grpc_resilience/metric_snapshots.h"

namespace resilience {

// StatusCodeCounters
//
// 17 counters, one per status code from OK (0) to UNAUTHENTICATED (16), and
// one "other" slot for any number outside that range (a peer may send any
// number in grpc-status). Increment() is one relaxed fetch_add; Snapshot()
// reads each counter once.
//
// This class is thread-safe.
//
// Example:
//   StatusCodeCounters codes;
//   codes.Increment(static_cast<int>(status.error_code()));
//   StatusCodeCountsSnapshot s = codes.Snapshot();
//   for (size_t slot = 0; slot < StatusCodeCounters::kNumSlots; ++slot) {
//     if (s.counts[slot] > 0) Print(StatusCodeCounters::SlotName(slot), s.counts[slot]);
//   }
class StatusCodeCounters {
 public:
  static constexpr size_t kNumCodes = StatusCodeCountsSnapshot::kNumCodes;
  static constexpr size_t kOtherSlot = StatusCodeCountsSnapshot::kOtherSlot;
  static constexpr size_t kNumSlots = StatusCodeCountsSnapshot::kNumSlots;

  StatusCodeCounters() = default;
  StatusCodeCounters(const StatusCodeCounters&) = delete;
  StatusCodeCounters& operator=(const StatusCodeCounters&) = delete;

  // Slot()
  //
  // Where `code` is counted: the code itself for 0..16, else kOtherSlot.
  static size_t Slot(int code) {
    return static_cast<unsigned>(code) < kNumCodes ? static_cast<size_t>(code) : kOtherSlot;
  }

  // SlotName()
  //
  // The label value of a slot: the code's canonical name ("OK",
  // "DEADLINE_EXCEEDED", ...), "OTHER" for kOtherSlot; "" past the last slot.
  static absl::string_view SlotName(size_t slot) { return StatusCodeCountsSnapshot::SlotName(slot); }

  // Increment()
  //
  // Counts one status with the number `code`.
  void Increment(int code) { counts_[Slot(code)].fetch_add(1, std::memory_order_relaxed); }

  // Get()
  //
  // The count of `code`'s slot (for any code outside 0..16: the other slot).
  uint64_t Get(int code) const { return counts_[Slot(code)].load(std::memory_order_relaxed); }

  // Snapshot()
  //
  // Every slot's count now.
  StatusCodeCountsSnapshot Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kNumSlots> counts_{};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_STATUS_CODE_COUNTERS_H_
