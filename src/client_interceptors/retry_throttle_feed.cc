#include "grpc_resilience/internal/client_interceptors/retry_throttle_feed.h"

#include <cstring>

#include "grpc_resilience/internal/client_interceptors/local_rejection.h"
#include "grpc_resilience/internal/grpc_common/metadata_keys.h"

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
  const int code = static_cast<int>(status.error_code());
  bool failure = code > 0 && code < 32 && ((state.throttle_failure_codes >> code) & 1) != 0;
  if (!failure) {
    const auto* trailers = methods->GetRecvTrailingMetadata();
    failure = trailers->find(grpc::string_ref(kPushbackKey, std::strlen(kPushbackKey))) !=
              trailers->end();
  }
  if (failure) state.throttle->RecordFailure();
}

}  // namespace resilience
