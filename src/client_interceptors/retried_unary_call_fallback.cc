// The fallback of a RetriedUnaryCall: run in the re-entry after Hijack(),
// once the call is decided, outside its lock (FallbackStage).

#include <optional>

#include "src/client_interceptors/retried_unary_call.h"

namespace resilience {

void RetriedUnaryCall::RunFallback() {
  fallback_ran_ = true;
  std::optional<FallbackCause> refused;
  bool cancelled;
  {
    // Read once: every event of the call has come (Hijack() was the last
    // use of the state by another thread).
    MutexLock lock(&mu_);
    if (final_status_.ok()) return;
    cancelled = cancelled_;
    if (bulkhead_rejected_) {
      refused = FallbackCause::kBulkhead;
    } else if (shown_ != nullptr && shown_->rejected_locally) {
      refused = FallbackCause::kBreaker;
    } else if (budget_spent_) {
      refused = FallbackCause::kRetryBudget;
    }
  }
  original_code_ = final_status_.error_code();
  if (fallback_.Run(refused, request_, final_status_, cancelled)) {
    counters_.FellBack(fallback_.cause());
  }
}

}  // namespace resilience
