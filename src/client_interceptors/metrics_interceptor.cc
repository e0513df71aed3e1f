#include "src/client_interceptors/metrics_interceptor.h"

#include "src/client_interceptors/retry_throttle_feed.h"

namespace resilience {

using grpc::experimental::InterceptionHookPoints;

void MetricsInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    meter_.BeginOneAttempt(*state_);
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    meter_.End(*state_, static_cast<int>(methods->GetRecvStatus()->error_code()));
    FeedRetryThrottle(*state_, *info_->client_context(), methods);
    state_->reconnect->Poke(info_->channel(), methods->GetRecvStatus()->error_code());
  }
  methods->Proceed();
}

}  // namespace resilience
