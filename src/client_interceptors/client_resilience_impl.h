// File: src/client_interceptors/client_resilience_impl.h
//
// The state the client interceptors of one channel share: per method, the
// resolved policy, the circuit breaker (one per channel and method, shared by
// all calls), the retry budget and backoff, and counters.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_IMPL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_IMPL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/client_resilience.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/endpoint_resolver.h"
#include "src/client_interceptors/endpoint_router.h"
#include "src/client_interceptors/fallback_registry.h"
#include "src/client_interceptors/health_name_check.h"
#include "src/client_interceptors/health_probe_sender.h"
#include "src/core/method_cache.h"
#include "src/engine/limiter_factory.h"
#include "src/engine/method_registry.h"
#include "src/core/mutex.h"
#include "grpc_resilience/policy_update.h"
#include "grpc_resilience/events.h"
#include "src/metrics/latency_histogram.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

struct CallPlan;             // call_plan.h
class BreakerEventQueue;     // breaker_event_queue.h
class ResilientCallFactory;  // resilient_call_factory.h

// ClientResilienceImpl
//
// The engine behind the public ClientResilience
// (grpc_resilience/client_resilience.h), which forwards to it: one per
// channel, shared by the chain's factories. Options are the public ones
// (ClientResilience::Options); the clock of the breakers is given here, so
// that tests and benches can run them on a SimulatedClock. Thread-safe.
class ClientResilienceImpl {
 public:
  using Options = ClientResilience::Options;

  // `clock` must outlive the channel.
  ClientResilienceImpl(PolicySet policies, Options options, Clock& clock = Clock::Real());

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

  // EndpointStats()
  //
  // The per-endpoint breakers of `method`, sorted by endpoint; empty when
  // it has none.
  std::vector<EndpointBreakerStats> EndpointStats(absl::string_view method);

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

  // EnableHealthProbes()
  //
  // Lets the breakers with breaker.recoveryProbe probe the server's health:
  // on a channel of their own to `target` with `credentials` and `args`
  // (made at the first probe). CreateResilientChannel() calls it before any
  // call can be made; without it nothing is probed.
  void EnableHealthProbes(const std::string& target,
                          std::shared_ptr<grpc::ChannelCredentials> credentials,
                          const grpc::ChannelArguments& args);

  // ListTargetEndpoints()
  //
  // The endpoints `target` lists (an ipv4: or ipv6: list; none for a name
  // to resolve), for the per-endpoint breakers made from then on
  // (EndpointBreakers::Options::listed_endpoints: at the channel's start,
  // the listed endpoints not seen yet count as serving).
  // CreateResilientChannel() calls it before any call can be made.
  void ListTargetEndpoints(const std::string& target) {
    listed_endpoints_.store(EndpointResolver::ListedCount(target), std::memory_order_relaxed);
  }

  // EnableRouting()
  //
  // The channel's own endpoint picker (EndpointRouter), when the policies'
  // loadBalancingConfig starts with resilience_p2c: every unary attempt of
  // a generated stub then goes to the endpoint it picks among `target`'s
  // addresses. CreateResilientChannel() calls it before any call can be
  // made. Returns what keeps it from applying (a target the library does
  // not resolve: gRPC's policy routes every call), one line each.
  std::vector<std::string> EnableRouting(const std::string& target,
                                         std::shared_ptr<grpc::ChannelCredentials> credentials,
                                         const grpc::ChannelArguments& args,
                                         EndpointRouter::InterceptorMaker make_inner);
  // Null without one.
  EndpointRouter* router() { return router_.get(); }

  // ControlBreaker() / AppendStatus(): see ClientResilience.
  absl::Status ControlBreaker(absl::string_view method, BreakerCommand command,
                              absl::string_view origin);
  absl::Status ControlEndpointBreaker(absl::string_view method, absl::string_view endpoint,
                                      BreakerCommand command, absl::string_view origin);
  void AppendStatus(StatusReport& report);
  // SetEnforcement(): see ClientResilience (client_enforcement.cc).
  absl::Status SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                              EnforcementMode mode, absl::string_view origin);

  // The channel's retryThrottling (gRFC A6), fed by every call on the
  // channel whatever its method; null when the policy file has none.
  std::shared_ptr<const RetryBudget> retry_throttle();
  // Its settings, from the policy file; nullopt when it has none.
  std::optional<RetryBudgetSettings> retry_throttling();
  // Both, of one generation; nullopt when it has none.
  std::optional<RetryThrottleState> retry_throttle_state();

  // Update() / ReloadFile(): see ClientResilience (client_policy_update.cc).
  absl::StatusOr<PolicyUpdate> Update(const PolicySet& policies, absl::string_view source = "")
      ABSL_LOCKS_EXCLUDED(update_mu_);
  absl::StatusOr<PolicyUpdate> ReloadFile(const std::string& path,
                                          const PolicySet::LoadOptions& options)
      ABSL_LOCKS_EXCLUDED(update_mu_);
  // The policies in force and their generation (1: the ones given at
  // construction; each successful Update() adds one).
  PolicySet policies();
  int64_t generation();
  // Policy files that failed to load in ReloadFile() (nothing changed).
  int64_t failed_reloads() const { return failed_reloads_.load(std::memory_order_relaxed); }
  // The fallbacks registered from code (SetFallback(), fallback.h).
  FallbackRegistry& fallbacks() { return fallbacks_; }

 private:
  // The call objects reach the per-method state through their CallPlan;
  // the factory takes the breakers' clock and the event queue.
  friend CallPlan PlanCall(ClientResilienceImpl& resilience,
                           grpc::experimental::ClientRpcInfo* info);
  friend class ResilientCallFactory;
  friend class ClientResilienceTestPeer;
  friend class PolicyUpdateTestPeer;

  static ClientMethodStats StatsOf(const ClientMethodState& state);
  // Every state made so far, sorted by method name.
  std::vector<std::shared_ptr<const ClientMethodState>> SortedStates();

  // The state of `method`; null when no policy covers it and metrics are
  // off (its calls pass through untouched), or past MethodCache's bound on
  // names nobody vouches for.
  std::shared_ptr<ClientMethodState> ForMethod(const char* method);
  // The per-endpoint breakers of `state`'s method, from its breaker
  // settings; their transitions go to the events listener.
  std::unique_ptr<EndpointBreakers> MakeEndpointBreakers(const ClientMethodState& state);
  Clock& clock() { return clock_; }
  // Where the breakers' transitions wait for delivery to Options::events;
  // null when there is no listener.
  BreakerEventQueue* breaker_events() { return breaker_events_.get(); }

  // One set of policies in force, and the channel's retryThrottling made
  // for it (null: none); replaced whole by Update().
  struct Generation {
    PolicySet policies;
    std::shared_ptr<RetryBudget> throttle;
    int64_t number = 1;
  };
  std::shared_ptr<const Generation> CurrentGeneration() { return methods_.Current(); }
  // The channel's retryThrottling bucket for `policies`; null when they
  // have none.
  static std::shared_ptr<RetryBudget> MakeRetryThrottle(const PolicySet& policies);

  // The state of `method` under `generation`. `previous` (may be null): the
  // method's state so far, whose counters the new one continues and whose
  // parts with unchanged settings it shares (client_policy_update.cc).
  MethodCache<ClientMethodState>::Resolution Resolve(const char* method,
                                                     const Generation& generation,
                                                     const ClientMethodState* previous = nullptr);
  // The state of `method` for an operator's command: the one made so far,
  // else made now when a policy gives it what is `wanted` and the name is a
  // real method (`known`: linked into the process, named in the file, or
  // called already); null otherwise (client_resilience_operations.cc).
  std::shared_ptr<ClientMethodState> StateForOperator(
      absl::string_view method, bool& known,
      absl::FunctionRef<bool(const MethodPolicy&)> wanted);
  // `policy`'s enforcement modes of `state`'s breaker and bulkhead (null:
  // none; the reports are bound to the method either way),
  // applied in place where the file changed them (MethodEnforcement); each
  // switch is added to `switched` (null: none kept) as a policy file's
  // OperatorEvent (`source`), for the listener once no lock is held.
  void ApplyFileEnforcement(const ClientMethodState& state, const MethodPolicy* policy,
                            absl::string_view source,
                            std::vector<OperatorEvent>* switched = nullptr);
  // The breakers of `state` as an enforcement switch to `mode` leaves them:
  // switched off, they forget their window (kReset) and close.
  void OnEnforcementSwitched(const ClientMethodState& state, EnforcedPolicy policy,
                             EnforcementMode mode);
  // The breaker of `state`'s policy, its transitions counted in the state's
  // tally and queued for the events listener.
  std::unique_ptr<Breaker> MakeBreaker(const ClientMethodState& state);

  const Options options_;
  Clock& clock_;
  // Makes the methods' breakers and bulkheads.
  const LimiterFactory limiters_{clock_, options_.seed};
  // Serializes Update()s.
  Mutex update_mu_;
  std::atomic<int64_t> failed_reloads_{0};
  // ListTargetEndpoints()'s count.
  std::atomic<int> listed_endpoints_{0};
  // Before methods_: their states point to these.
  ReconnectWatch reconnect_;
  const std::shared_ptr<BreakerEventQueue> breaker_events_;
  // Set once before any call (EnableRouting()); its endpoints' channels
  // outlive the calls, which hold them.
  std::unique_ptr<EndpointRouter> router_;
  // Each method's state, and the generation in force.
  MethodRegistry<ClientMethodState, Generation> methods_;
  // With a healthCheckConfig.serviceName; before probe_sender_, whose
  // probes' answers it takes.
  std::unique_ptr<HealthNameCheck> health_name_check_;
  // After methods_, so destroyed first: its destructor waits for the probes
  // in flight, whose answers go to the states' RecoveryProbes.
  std::unique_ptr<HealthProbeSender> probe_sender_;
  FallbackRegistry fallbacks_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_RESILIENCE_IMPL_H_
