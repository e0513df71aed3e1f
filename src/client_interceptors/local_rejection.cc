#include "src/client_interceptors/local_rejection.h"

namespace resilience {
namespace {

// The value of the kLocalRejectionKey trailer a rejection adds. Its address
// is the proof that the trailer was made here: trailers received from a
// server live in the call's own buffers, never in this array.
constexpr char kLocalRejectionValue[] = "breaker";
constexpr char kBulkheadRejectionValue[] = "bulkhead";

}  // namespace

bool RejectedLocally(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto [begin, end] =
      trailers.equal_range(grpc::string_ref(kLocalRejectionKey, sizeof(kLocalRejectionKey) - 1));
  for (auto it = begin; it != end; ++it) {
    if (it->second.data() == kLocalRejectionValue || it->second.data() == kBulkheadRejectionValue) {
      return true;
    }
  }
  return false;
}

void MarkRejectedLocally(std::multimap<grpc::string_ref, grpc::string_ref>* trailers,
                         LocalRejector by) {
  // string_refs into static storage: they outlive the call, and the value's
  // address is what RejectedLocally() checks.
  trailers->emplace(grpc::string_ref(kLocalRejectionKey, sizeof(kLocalRejectionKey) - 1),
                    by == LocalRejector::kBulkhead
                        ? grpc::string_ref(kBulkheadRejectionValue,
                                           sizeof(kBulkheadRejectionValue) - 1)
                        : grpc::string_ref(kLocalRejectionValue, sizeof(kLocalRejectionValue) - 1));
}

}  // namespace resilience
