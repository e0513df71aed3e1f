// File: src/client_interceptors/client_method_state.h
//
// The per-method state the client interceptors of one channel share
// (internal: reached through ClientResilience by the interceptors only).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "grpc_resilience/internal/breaker/backoff.h"
#include "grpc_resilience/internal/breaker/breaker.h"
#include "grpc_resilience/internal/breaker/random_source.h"
#include "grpc_resilience/internal/breaker/retry_budget.h"
#include "grpc_resilience/internal/policy/method_policy.h"

namespace resilience {

// What the interceptors of one method need, resolved once per method.
struct ClientMethodState {
  std::string method;
  const MethodPolicy* policy = nullptr;
  // Unary calls of this method go through the retry interceptor (the policy
  // allows more than one attempt); it then owns their attempts, per-attempt
  // timeouts and the call's deadline. Otherwise the timeout interceptor
  // enforces those.
  bool wraps_unary = false;
  // The method is in protobuf's generated descriptor pool (stub_kind.h).
  bool protobuf_method = false;
  // The name address a generated stub's calls carry, once seen (stub_kind.h);
  // a call with this address needs no further check.
  std::atomic<const char*> generated_stub_name{nullptr};
  std::atomic<bool> reported_stub_pass_through{false};
  RetrySettings retry;  // max_attempts 1 when the policy has no retryPolicy
  std::unique_ptr<Breaker> breaker;  // null: no breaker
  std::unique_ptr<RetryBudget> budget;
  std::unique_ptr<RandomSource> random;
  std::unique_ptr<Backoff> backoff;

  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> attempts{0};
  std::atomic<int64_t> retries{0};
  std::atomic<int64_t> rejected_by_breaker{0};
  std::atomic<int64_t> attempt_timeouts{0};
  std::atomic<int64_t> retry_budget_exhausted{0};
  std::atomic<int64_t> pushback_stops{0};
  std::atomic<int64_t> not_retried_stub_calls{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_
