#include "src/client_interceptors/call_plan.h"

#include "src/client_interceptors/grpc_internals.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;

}  // namespace

bool FromGeneratedStub(const char* method, ClientMethodState& state) {
  if (state.generated_stub_name.load(std::memory_order_acquire) == method) return true;
  if (!state.protobuf_method || !internal::InReadOnlyStaticStorage(method)) return false;
  state.generated_stub_name.store(method, std::memory_order_release);
  return true;
}

CallPlan PlanCall(ClientResilienceImpl& resilience, ClientRpcInfo* info) {
  CallPlan plan;
  std::shared_ptr<ClientMethodState> state = resilience.ForMethod(info->method());
  if (state == nullptr) return plan;
  plan.state = state;
  // Counted when it must be counted, or heard by the channel's
  // retryThrottling.
  plan.metrics = state->metrics || state->throttle != nullptr;
  if (state->policy == nullptr) return plan;
  const bool unary = info->type() == ClientRpcInfo::Type::UNARY;
  // With the library's endpoint picker every unary call of a generated
  // stub is issued by the call object, on the endpoint it picks, even with
  // one attempt (an ejected endpoint then gets none).
  if (unary && (state->wraps_unary || resilience.router() != nullptr)) {
    if (FromGeneratedStub(info->method(), *state)) {
      plan.retry = true;
      return plan;
    }
    plan.unretried_stub = true;
  }
  plan.timeout = state->policy->timeout.has_value() ||
                 (unary && state->retry.per_attempt_timeout.has_value());
  plan.breaker = state->breaker != nullptr;
  plan.bulkhead = unary && state->bulkhead != nullptr;
  return plan;
}

}  // namespace resilience
