// File: src/server_interceptors/server_resilience_impl.h
//
// The state the server interceptors share: per-method settings resolved from
// the policies, the limiters (per method, or per service / default scope when
// the policy names a whole service or is the default), and per-method
// counters for metrics and tests.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_IMPL_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_IMPL_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc_resilience/server_resilience.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/core/process_cpu_time_source.h"
#include "src/limits/cpu_utilisation_meter.h"
#include "src/limits/call_duration_estimate.h"
#include "src/core/clock.h"
#include "src/limits/concurrency_limiter.h"
#include "src/limits/criticality_shares.h"
#include "src/policy/method_policy.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"
#include "src/core/serial_executor.h"
#include "src/limits/token_bucket.h"
#include "src/global_limits/fleet_limit_backend.h"
#include "src/global_limits/global_rate_limit.h"
#include "src/core/method_cache.h"
#include "src/engine/limiter_factory.h"
#include "src/engine/method_registry.h"
#include "grpc_resilience/policy_update.h"
#include "grpc_resilience/events.h"
#include "src/core/counter_list.h"
#include "src/metrics/latency_histogram.h"
#include "src/metrics/method_meter.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"
#include "src/policy/policy_set_access.h"
#include "src/server_interceptors/proceed_executor.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/server_call_meter.h"
#include "src/server_interceptors/server_method_state.h"
#include "src/server_interceptors/guard_registry.h"
#include "src/server_interceptors/server_drainer.h"

namespace resilience {

// ServerResilienceImpl
//
// The engine behind the public ServerResilience
// (grpc_resilience/server_resilience.h), which forwards to it. Created by
// AddServerInterceptors(); shared by its factories. Methods are resolved on their first call and kept
// in a MethodCache (lock-free lookups). This class is thread-safe.
class ServerResilienceImpl {
 public:
  // The grpc_method of the calls counted together because their name is
  // the client's invention (see `metrics`).
  static constexpr absl::string_view kUnknownMethod = ServerResilience::kUnknownMethod;

  // `events` (optional) hears of every throttle saturation.
  //
  // `metrics`: count every method's calls, with or without a policy: by the
  // status sent, handler latency and in flight (AppendMetrics(),
  // AllStats()); a call with neither throttle nor fault injection is then
  // only counted by its ServerCall. Methods linked into the process
  // or named exactly by the policies get their own counters; any other name
  // without a throttle or fault injection (it comes from a client: an
  // unimplemented method) is counted under kUnknownMethod, so that clients
  // cannot make series up. false: methods without throttle or fault
  // injection pass through untouched and nothing is counted by status or
  // latency.
  //
  // `fleet_limits` makes the lease sources of throttle.global limits (null:
  // a scope with one rejects every call, FleetLimitBackend::MissingMessage()).
  //
  // `not_serving_grace`: how long Drain() serves after reporting NOT_SERVING
  // (ServerResilienceOptions::not_serving_grace).
  ServerResilienceImpl(PolicySet policies, Clock& clock,
                       std::shared_ptr<ResilienceEvents> events = nullptr, bool metrics = true,
                       std::shared_ptr<const FleetLimitBackend> fleet_limits = nullptr,
                       absl::Duration not_serving_grace = absl::ZeroDuration());

  // Stats()
  //
  // The counters of `method`; all zero if it has not been called.
  // Stats(kUnknownMethod): the calls counted under that name.
  ServerMethodStats Stats(absl::string_view method) ABSL_LOCKS_EXCLUDED(mu_);

  // AllStats()
  //
  // The counters of every method called so far (with metrics on, those
  // without a policy too, and kUnknownMethod once it counted a call),
  // sorted by method name.
  std::vector<std::pair<std::string, ServerMethodStats>> AllStats();

  // AppendStatus(): see ServerResilience.
  void AppendStatus(StatusReport& report, absl::string_view name);

  // AppendMetrics()
  //
  // Adds the server's metrics to `text`, the families of docs/metrics.md
  // (grpc_resilience_server_*), every sample labelled grpc_method: one
  // sample set per method called so far, in method order. Families are
  // declared in a fixed order, so a ClientResilience can add to the same
  // text. Takes a snapshot: safe while calls run.
  void AppendMetrics(PrometheusText& text);

  bool metrics() const { return metrics_; }

  // FlushEvents()
  //
  // Events reach the ResilienceEvents listener on a thread of their own, in
  // order, after the call that caused them went on; this returns once every
  // event caused so far was delivered (tests, a shutdown that wants the last
  // ones). Called from the listener it returns at once (SerialExecutor::
  // Flush()).
  void FlushEvents() {
    if (events_ != nullptr) events_->Flush();
  }

  // The policies in force and their generation (1: the ones given at
  // construction; each successful Update() adds one).
  PolicySet policies();
  int64_t generation();
  // Update() / ReloadFile(): see ServerResilience (server_policy_update.cc).
  absl::StatusOr<PolicyUpdate> Update(const PolicySet& policies, absl::string_view source = "")
      ABSL_LOCKS_EXCLUDED(update_mu_, mu_);
  absl::StatusOr<PolicyUpdate> ReloadFile(const std::string& path,
                                          const PolicySet::LoadOptions& options)
      ABSL_LOCKS_EXCLUDED(update_mu_, mu_);
  // SetEnforcement(): see ServerResilience (server_enforcement.cc).
  absl::Status SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                              EnforcementMode mode, absl::string_view origin)
      ABSL_LOCKS_EXCLUDED(update_mu_, mu_);
  // Policy files that failed to load in ReloadFile() (nothing changed).
  int64_t failed_reloads() const { return failed_reloads_.load(std::memory_order_relaxed); }

  // The verdicts of the interceptors on calls, for the GuardedServices. An
  // application's own server interceptor may Reject() the server context of
  // a call it rejects (and Forget() it when destroyed): the guard then skips
  // that call's handler too.
  CallVerdicts& call_verdicts() { return call_verdicts_; }

  // EndHoldsAt()
  //
  // Calls held in an injected delay are answered (UNAVAILABLE or
  // DEADLINE_EXCEEDED, without their handler) at `when` at the latest. Call
  // it with the end of a shutdown's grace period, before Server::Shutdown():
  // the callback API's held calls do not see the shutdown otherwise.
  // ServerDrainer::Drain() calls it.
  void EndHoldsAt(absl::Time when) { call_verdicts_.EndHoldsAt(when); }

  // The graceful shutdown and the health service's view (ServerDrainer).
  ServerDrainer& drainer() { return drainer_; }
  // The services behind a GuardedService (GuardRegistry).
  GuardRegistry& guards() { return guards_; }

 private:
  // A call's access to its method's state.
  friend class ServerCall;
  friend class PolicyUpdateTestPeer;

  static ServerMethodStats StatsOf(const ServerMethodState& state);
  // Every state made so far, with the unknown one when it counted a call,
  // sorted by method name.
  std::vector<std::shared_ptr<const ServerMethodState>> SortedStates();

  // The state of `method` ("/pkg.Service/Method"). With metrics off: null
  // when its policy has neither a throttle nor fault injection. With
  // metrics on: never null (the unknown state for names no one vouches
  // for).
  // A ServerCall looks its method up once: one generation for the call.
  std::shared_ptr<ServerMethodState> ForMethod(const char* method) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether any policy has a throttle / fault injection at all; a call
  // skips the lookup when neither, and metrics are off.
  bool any_throttle() const { return any_throttle_.load(std::memory_order_acquire); }
  bool any_fault_injection() const {
    return any_fault_injection_.load(std::memory_order_acquire);
  }
  Clock& clock() { return clock_; }
  // Where held-back calls of unguarded sync services are resumed.
  ProceedExecutor& executor() { return executor_; }

  // One set of policies in force; replaced whole by Update().
  struct Generation {
    PolicySet policies;
    int64_t number = 1;
  };
  void SetAnyPolicies(const PolicySet& policies);

  // The limits of `scope` for `settings` (whose canonical form is `form`):
  // the scope's current ones when made for the same form; else new ones:
  // the limiters from limiters_ (LimiterFactory::ForScope(), keeping those
  // of the current that stay meaningful), the rest from the settings and
  // the server (modes, CPU meter, where shadow decisions go).
  std::shared_ptr<ScopeLimits> LimitsFor(absl::string_view scope, const ThrottleSettings& settings,
                                         const std::string& form)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Update()'s part for `enforcement` (server_enforcement.cc): each made
  // scope takes the mode of every block whose `enforcement` differs between
  // `before` and `after`, in place; the others keep theirs (an operator's).
  void ApplyEnforcement(const PolicyTable& before, const PolicyTable& after)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The method's grpc_resilience_server_shadow_rejections_total samples:
  // a policy in shadow, or one that counted (server_enforcement.cc).
  static void AppendShadowSamples(const ServerMethodState& s, PrometheusText::Family& family);
  // The status row's enforcement and shadow_rejected.
  static void ShadowStatus(const ServerMethodState& s, const ServerMethodStats& stats,
                           ServerMethodStatus& row);
  // "throttle: shadow, cpu: off": the policies `modes` do not enforce.
  static std::string EnforcementText(const EnforcementModes& modes);
  // The state of `method` under `generation`; `previous` (may be null): the
  // method's state so far, whose counters the new one continues.
  MethodCache<ServerMethodState>::Resolution Resolve(const char* method,
                                                     const Generation& generation,
                                                     const ServerMethodState* previous = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

  Clock& clock_;
  // The process's CPU utilisation, for every scope with throttle.cpu.
  CpuUtilisationMeter cpu_meter_{clock_, ProcessCpuTimeSource::Get()};
  // Serializes Update()s.
  Mutex update_mu_;
  std::atomic<int64_t> failed_reloads_{0};
  const std::shared_ptr<const FleetLimitBackend> fleet_limits_;  // null: none
  // Makes the scopes' limiters (LimitsFor()).
  const LimiterFactory limiters_{clock_, /*seed=*/0, fleet_limits_};
  // Both null without a listener; events_ (declared after listener_) runs
  // the deliveries still queued when it is destroyed.
  const std::shared_ptr<ResilienceEvents> listener_;
  std::unique_ptr<SerialExecutor> events_;
  std::atomic<bool> any_throttle_{false};
  std::atomic<bool> any_fault_injection_{false};
  const bool metrics_;
  // Each method's state, and the generation in force.
  MethodRegistry<ServerMethodState, Generation> methods_;
  // The calls of the names counted under kUnknownMethod.
  const std::shared_ptr<ServerMethodState> unknown_ = std::make_shared<ServerMethodState>();
  Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<ScopeLimits>> scopes_ ABSL_GUARDED_BY(mu_);
  CallVerdicts call_verdicts_;
  // Resumes its parked calls on executor_ (declared after it: the drainer
  // keeps its address only).
  ServerDrainer drainer_;
  GuardRegistry guards_{call_verdicts_, drainer_.health()};
  // Last member: destroyed first, joining its threads while the rest is alive.
  ProceedExecutor executor_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_IMPL_H_
