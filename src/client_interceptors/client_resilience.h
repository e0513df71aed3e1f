// File: src/client_interceptors/client_resilience.h
//
// The state the client interceptors of one channel share: per method, the
// resolved policy, the circuit breaker (one per channel and method, shared by
// all calls), the retry budget and backoff, and counters.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "grpc_resilience/internal/breaker/breaker.h"
#include "grpc_resilience/internal/breaker/clock.h"
#include "grpc_resilience/internal/client_interceptors/client_method_state.h"
#include "grpc_resilience/internal/grpc_common/method_cache.h"
#include "grpc_resilience/internal/grpc_common/resilience_events.h"
#include "grpc_resilience/internal/policy/policy_set.h"

namespace resilience {

// Counters of one method on one channel, as read by ClientResilience::Stats().
struct ClientMethodStats {
  // Logical calls the application made (each unary call once, however many
  // attempts it took).
  int64_t calls = 0;
  // Attempts that reached the breaker (admitted or rejected).
  int64_t attempts = 0;
  int64_t retries = 0;
  int64_t rejected_by_breaker = 0;
  // Attempts that hit their per-attempt timeout.
  int64_t attempt_timeouts = 0;
  // Retries not made because the retry budget was spent.
  int64_t retry_budget_exhausted = 0;
  // Retries not made because the server's pushback said not to.
  int64_t pushback_stops = 0;
  // Unary calls of a retried method that were passed through without retry
  // because they did not come from a protobuf generated stub (e.g. a
  // GenericStub); see stub_kind.h.
  int64_t not_retried_stub_calls = 0;
};

// ClientResilience
//
// Created by ClientInterceptorFactories() / CreateResilientChannel(), one per
// channel, shared by the factories. Thread-safe.
class ClientResilience {
 public:
  struct Options {
    // Clock of the breakers. Must outlive the channel.
    Clock* clock = &Clock::Real();
    // Seed of the retry jitter and the SRE drop decisions.
    uint64_t seed = 1;
    // Names the channel in messages (e.g. its target).
    std::string name;
    // Told of every breaker transition of every method (LogEvents prints
    // them); null: nobody.
    std::shared_ptr<ResilienceEvents> events;
  };

  ClientResilience(PolicySet policies, Options options);

  // Stats() / BreakerSnapshotOf()
  //
  // The counters and the breaker of `method` ("/pkg.Service/Method"); zeros
  // / nullopt when it was not called yet or has no breaker.
  ClientMethodStats Stats(absl::string_view method);
  std::optional<BreakerSnapshot> BreakerSnapshotOf(absl::string_view method);

  const std::string& name() const { return options_.name; }

 private:
  // The interceptors' access to the per-method state.
  friend class RetryInterceptorFactory;
  friend class TimeoutInterceptorFactory;
  friend class BreakerInterceptorFactory;
  friend class ClientResilienceTestPeer;

  // The state of `method`; null when no policy covers it (its calls pass
  // through untouched).
  ClientMethodState* ForMethod(const char* method);
  Clock& clock() { return *options_.clock; }

  MethodCache<ClientMethodState>::Resolution Resolve(const char* method);

  const PolicySet policies_;
  const Options options_;
  MethodCache<ClientMethodState> methods_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_
