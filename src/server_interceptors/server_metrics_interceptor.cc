#include "src/server_interceptors/server_metrics_interceptor.h"

namespace resilience {

using grpc::experimental::InterceptionHookPoints;

void ServerMetricsInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    meter_.Admit(*state_);
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    meter_.StatusSent(*state_, static_cast<int>(methods->GetSendStatus().error_code()),
                      /*handler_skipped=*/false);
  }
  methods->Proceed();
}

}  // namespace resilience
