// File: src/client_interceptors/retry_throttle_feed.h
//
// How a call that no retry interceptor took changes the channel's
// retryThrottling (gRFC A6: every call on the channel counts, whatever its
// method).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_THROTTLE_FEED_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_THROTTLE_FEED_H_

#include "grpcpp/client_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/client_method_state.h"

namespace resilience {

// FeedRetryThrottle()
//
// Tells `state.throttle` (nothing when null) how the call of `context`
// ended, at its POST_RECV_STATUS in `methods`: OK gives back the token
// ratio; a code its method's policy retries or hedges on (asked of
// state.retry_decider and state.hedging_decider), or any end with a grpc-retry-pushback-ms
// trailer, takes a token; a call our breaker rejected (never sent) and any
// other end change nothing. Called once per call by the interceptor that
// meters it (CallMeter), which is never the retry interceptor: the deciders
// feed the throttle with the attempts of the calls it takes.
void FeedRetryThrottle(const ClientMethodState& state, const grpc::ClientContext& context,
                       grpc::experimental::InterceptorBatchMethods* methods);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_THROTTLE_FEED_H_
