#include "src/client_interceptors/retry_throttle_feed.h"


#include "src/client_interceptors/local_rejection.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

void FeedRetryThrottle(const ClientMethodState& state, const grpc::ClientContext& context,
                       grpc::experimental::InterceptorBatchMethods* methods) {
  if (state.throttle == nullptr) return;
  const grpc::Status& status = *methods->GetRecvStatus();
  if (status.ok()) {
    state.throttle->RecordSuccess();
    return;
  }
  if (RejectedLocally(context)) return;
  // A code the method's policy retries or hedges on costs a token; a
  // pushback costs one whatever the code.
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  bool failure = (state.retry_decider != nullptr && state.retry_decider->max_attempts() > 1 &&
                  state.retry_decider->IsRetryable(code)) ||
                 (state.hedging_decider != nullptr && state.hedging_decider->IsNonFatal(code));
  if (!failure) {
    failure = FindMetadata(*methods->GetRecvTrailingMetadata(), kPushbackKey).has_value();
  }
  if (failure) state.throttle->RecordFailure();
}

}  // namespace resilience
