// File: src/metrics/status_code_counters.cc

#include "src/metrics/status_code_counters.h"

namespace resilience {
namespace {

// Indexed by code number; the canonical names of the status codes.
constexpr absl::string_view kSlotNames[StatusCodeCounters::kNumSlots] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
    "OTHER",
};

}  // namespace

absl::string_view StatusCodeCountsSnapshot::SlotName(size_t slot) {
  return slot < kNumSlots ? kSlotNames[slot] : absl::string_view();
}

StatusCodeCountsSnapshot StatusCodeCounters::Snapshot() const {
  StatusCodeCountsSnapshot snapshot;
  for (size_t i = 0; i < kNumSlots; ++i) {
    snapshot.counts[i] = counts_[i].load(std::memory_order_relaxed);
  }
  return snapshot;
}

uint64_t StatusCodeCountsSnapshot::total() const {
  uint64_t total = 0;
  for (uint64_t count : counts) total += count;
  return total;
}

}  // namespace resilience
