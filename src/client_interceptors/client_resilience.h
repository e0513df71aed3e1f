// File: src/client_interceptors/client_resilience.h
//
// The state the client interceptors of one channel share: per method, the
// resolved policy, the circuit breaker (one per channel and method, shared by
// all calls), the retry budget and backoff, and counters.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/core/method_cache.h"
#include "grpc_resilience/events.h"
#include "src/metrics/latency_histogram.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

struct CallPlan;  // call_plan.h

// Counters of one method on one channel, as read by ClientResilience::Stats().
struct ClientMethodStats {
  // int64_t calls, attempts, retries, rejected_by_breaker, attempt_timeouts,
  // retry_budget_exhausted, pushback_stops, not_retried_stub_calls: what
  // each counts is said in GRPC_RESILIENCE_CLIENT_COUNTERS
  // (client_method_state.h).
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_COUNTER_FIELD)
  // With Options::metrics: the calls by the final status the application
  // got (counts[StatusCodeCounters::Slot(code)]), counted when they end,
  // and their latency from start to final status, retries and backoff
  // included.
  StatusCodeCountsSnapshot calls_by_code;
  LatencyHistogramSnapshot latency;
  // Breaker state changes, [from][to] indexed by BreakerState
  // (kClosed, kOpen, kHalfOpen).
  std::array<std::array<int64_t, 3>, 3> breaker_transitions{};

  // The calls that ended with `code`.
  uint64_t CallsWithCode(int code) const {
    return calls_by_code.counts[StatusCodeCounters::Slot(code)];
  }
  // The transitions from `from` to `to`.
  int64_t Transitions(BreakerState from, BreakerState to) const {
    return breaker_transitions[static_cast<size_t>(from)][static_cast<size_t>(to)];
  }
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
    // Names the channel in messages (e.g. its target), and in the `channel`
    // label of its metrics.
    std::string name;
    // Told of every breaker transition of every method (LogEvents prints
    // them); null: nobody.
    std::shared_ptr<ResilienceEvents> events;
    // Count every method's calls, with or without a policy: by final status
    // and latency (AppendMetrics(), AllStats()). A call with none of our
    // interceptors then gets a minimal one that only counts. false: methods
    // without a policy pass through untouched, and no call is counted by
    // status or latency (the other counters are kept).
    bool metrics = true;
  };

  ClientResilience(PolicySet policies, Options options);

  // Stats() / BreakerSnapshotOf()
  //
  // The counters and the breaker of `method` ("/pkg.Service/Method"); zeros
  // / nullopt when it was not called yet or has no breaker.
  ClientMethodStats Stats(absl::string_view method);
  std::optional<BreakerSnapshot> BreakerSnapshotOf(absl::string_view method);

  // AllStats()
  //
  // The counters of every method called so far (with Options::metrics,
  // those without a policy too), sorted by method name.
  std::vector<std::pair<std::string, ClientMethodStats>> AllStats();

  // AppendMetrics()
  //
  // Adds this channel's metrics to `text`, the families of docs/metrics.md
  // (grpc_resilience_client_*), every sample labelled grpc_method and
  // channel (Options::name): one sample set per method called so far, in
  // method order. Families are declared in a fixed order, so several
  // channels (give them different names) and a ServerResilience can add to
  // the same text. Takes a snapshot: safe while calls run.
  void AppendMetrics(PrometheusText& text);

  const std::string& name() const { return options_.name; }

  // The channel's retryThrottling (gRFC A6), fed by every call on the
  // channel whatever its method; null when the policy file has none.
  const RetryBudget* retry_throttle() const { return throttle_.get(); }

 private:
  // The interceptors reach the per-method state through their CallPlan.
  friend CallPlan PlanCall(ClientResilience& resilience,
                           grpc::experimental::ClientRpcInfo* info);
  friend grpc::experimental::Interceptor* MakeRetryInterceptor(
      ClientResilience& resilience, grpc::experimental::ClientRpcInfo* info);
  friend grpc::experimental::Interceptor* MakeBreakerInterceptor(
      ClientResilience& resilience, grpc::experimental::ClientRpcInfo* info);
  friend class ClientResilienceTestPeer;

  static ClientMethodStats StatsOf(const ClientMethodState& state);
  // Every state made so far, sorted by method name.
  std::vector<const ClientMethodState*> SortedStates();

  // The state of `method`; null when no policy covers it and metrics are
  // off (its calls pass through untouched), or past MethodCache's bound on
  // names nobody vouches for.
  ClientMethodState* ForMethod(const char* method);
  Clock& clock() { return *options_.clock; }

  MethodCache<ClientMethodState>::Resolution Resolve(const char* method);

  const PolicySet policies_;
  const Options options_;
  // Before methods_: their states point to these.
  const std::unique_ptr<RetryBudget> throttle_;
  ReconnectWatch reconnect_;
  MethodCache<ClientMethodState> methods_;
};

// What a factory of the chain gives a call: an interceptor, or null for
// none.
using ClientInterceptorMaker = grpc::experimental::Interceptor* (*)(
    ClientResilience& resilience, grpc::experimental::ClientRpcInfo* info);

// ClientChainFactory
//
// The factory of one interceptor of the client chain, sharing the channel's
// ClientResilience: for each call it returns what `Make` chooses from the
// call's CallPlan (call_plan.h). The chain's factories differ in that
// function only (RetryInterceptorFactory, TimeoutInterceptorFactory,
// BreakerInterceptorFactory).
// Thread-safe: it holds nothing but the shared state (itself thread-safe),
// and gRPC may create the interceptors of several calls at once.
template <ClientInterceptorMaker Make>
class ClientChainFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit ClientChainFactory(std::shared_ptr<ClientResilience> state)
      : state_(std::move(state)) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return Make(*state_, info);
  }

 private:
  const std::shared_ptr<ClientResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_H_
