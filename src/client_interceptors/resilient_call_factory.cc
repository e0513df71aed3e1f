#include "src/client_interceptors/resilient_call_factory.h"

#include <utility>

#include "src/client_interceptors/call_plan.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/retried_unary_call.h"
#include "src/client_interceptors/single_attempt_call.h"

namespace resilience {

ResilientCallFactory::ResilientCallFactory(std::shared_ptr<ClientResilienceImpl> resilience,
                                           Clock& clock, TimeoutScheduler* timeouts,
                                           CallTimers* timers)
    : resilience_(std::move(resilience)) {
  env_.clock = &clock;
  env_.breaker_clock = &resilience_->clock();
  env_.timeouts = timeouts != nullptr ? timeouts : &TimeoutScheduler::Global();
  if (timers != nullptr) env_.timers = timers;
  env_.events = resilience_->breaker_events();
  env_.router = resilience_->router();
  env_.fallbacks = &resilience_->fallbacks();
}

grpc::experimental::Interceptor* ResilientCallFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  // One of our own attempts, handed to us again by gRPC 1.51's
  // GetInterceptedChannel() index bug: it is already ours.
  if (info->suffix_for_stats() == internal::kAttemptSuffix) return nullptr;
  const CallPlan plan = PlanCall(*resilience_, info);
  if (plan.state == nullptr) return nullptr;
  if (plan.retry) return new RetriedUnaryCall(info, plan.state, env_);
  if (plan.single_attempt()) return new SingleAttemptCall(info, plan.state, plan, env_);
  return nullptr;
}

}  // namespace resilience
