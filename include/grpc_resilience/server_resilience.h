/// \file include/grpc_resilience/server_resilience.h
///
/// The resilience state of one server, as its user sees it: per method, the
/// counters (Stats()), the Prometheus metrics (AppendMetrics()), the policy
/// file's warnings, a graceful shutdown (Drain(), DrainAndShutdown()), and
/// the guard that keeps a rejected call from running its handler
/// (RegisterGuardedService()).
///
/// \code
///   std::shared_ptr<resilience::ServerResilience> resilience =
///       resilience::AddServerInterceptors(builder, *policies);
///   for (const std::string& w : resilience->warnings()) std::cerr << w << "\n";
///   resilience->Stats("/cache.v1.CacheService/Get").rejected_concurrency;
/// \endcode
///
/// How rejections look to clients: docs/server-rejection.md.

#ifndef GRPC_RESILIENCE_SERVER_RESILIENCE_H_
#define GRPC_RESILIENCE_SERVER_RESILIENCE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_update.h"
#include "grpc_resilience/status_report.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace resilience {

/// Counters of one method, as read by ServerResilience::Stats().
struct GRPC_RESILIENCE_EXPORT ServerMethodStats {
  /// Calls let through to the handler (by the throttle; without one, every
  /// call that fault injection did not abort).
  int64_t admitted = 0;
  /// Calls the throttle rejected: over its concurrency limit, over its rate.
  int64_t rejected_concurrency = 0;
  int64_t rejected_rate = 0;  ///< calls the throttle rejected over its rate
  /// Sheddable calls the CPU gate refused (throttle.cpu: the process's CPU
  /// utilisation was at or above its threshold).
  int64_t rejected_cpu = 0;
  /// Retried attempts (grpc-previous-rpc-attempts > 0) a limit refused while
  /// throttle.retryShedding is on: counted here instead of under their
  /// limit's rejected_concurrency or rejected_rate.
  int64_t rejected_retry = 0;
  /// Calls refused because their remaining deadline at arrival was below the
  /// method's recent service-time percentile (throttle.deadlineAdmission);
  /// answered DEADLINE_EXCEEDED without running the handler.
  int64_t rejected_deadline = 0;
  /// Calls whose resilience-criticality header named no level (judged at the
  /// method's default criticality; docs/criticality.md).
  int64_t criticality_invalid = 0;
  /// Admitted calls whose status has not been sent yet (or, for a call that
  /// closed without one, whose handler has not returned yet).
  int64_t in_flight = 0;
  /// Calls fault injection aborted / delayed.
  int64_t faults_aborted = 0;
  int64_t faults_delayed = 0;  ///< calls fault injection delayed
  /// Delayed calls whose deadline passed during the delay: handler skipped.
  int64_t expired_while_delayed = 0;
  /// Calls a policy in shadow would have rejected and let through
  /// (docs/shadow-mode-server.md), by policy: the throttle's own limits
  /// (maxConcurrency, adaptive, ratePerSecond), criticalityShares, the CPU
  /// gate, perCaller (with perCaller.global), the fleet-wide limit.
  int64_t shadow_throttle = 0;
  int64_t shadow_shares = 0;      ///< criticalityShares in shadow (see shadow_throttle)
  int64_t shadow_cpu = 0;         ///< throttle.cpu in shadow (see shadow_throttle)
  int64_t shadow_per_caller = 0;  ///< throttle.perCaller in shadow (see shadow_throttle)
  int64_t shadow_global = 0;      ///< throttle.global in shadow (see shadow_throttle)
  /// With metrics on: the calls answered, by the status sent
  /// (CallsWithCode()), rejected ones included, and the handler latency of
  /// admitted calls (admission to status).
  StatusCodeCountsSnapshot calls_by_code;
  LatencyHistogramSnapshot latency;  ///< handler latency (see calls_by_code)
  /// The concurrency limit of the method's scope now (fixed, or where an
  /// adaptive limit stands); 0 without one.
  int64_t concurrency_limit = 0;
  /// The throttle's rejections by the calls' criticality, indexed by
  /// CriticalityIndex() (CRITICAL_PLUS first).
  std::array<int64_t, kCriticalityLevels> rejected_by_criticality{};

  /// The calls answered with `code` (a grpc::StatusCode's number; any number
  /// above 16 counts in one "other" slot).
  uint64_t CallsWithCode(int code) const;
};

class ServerResilienceImpl;  // the engine; internal to the library

/// ServerResilience
///
/// The resilience state of one server: counters, metrics, live policy
/// updates, drain and health. Made by AddServerInterceptors()
/// (server_interceptors.h), one per server.
/// Thread-safe; Stats(), AllStats() and AppendMetrics() take snapshots and
/// are safe while calls run.
class GRPC_RESILIENCE_EXPORT ServerResilience {
 public:
  /// The grpc_method of the calls counted together because their name is
  /// the client's invention (an unimplemented method).
  static constexpr absl::string_view kUnknownMethod = "unknown";

  /// Over an engine the library made; `impl` must not be null.
  ServerResilience(std::shared_ptr<ServerResilienceImpl> impl, std::vector<std::string> warnings);
  ~ServerResilience();

  ServerResilience(const ServerResilience&) = delete;
  ServerResilience& operator=(const ServerResilience&) = delete;

  /// Stats()
  ///
  /// The counters of `method` ("/pkg.Service/Method"); all zero if it has not
  /// been called. Stats(kUnknownMethod): the calls counted under that name.
  ServerMethodStats Stats(absl::string_view method) const;

  /// AllStats()
  ///
  /// The counters of every method called so far (with metrics on, those
  /// without a policy too, and kUnknownMethod once it counted a call),
  /// sorted by method name.
  std::vector<std::pair<std::string, ServerMethodStats>> AllStats() const;

  /// AppendMetrics()
  ///
  /// Adds the server's metrics to `text`, the families of docs/metrics.md
  /// (grpc_resilience_server_*), every sample labelled grpc_method: one
  /// sample set per method called so far, in method order. Families are
  /// declared in a fixed order, so a ClientResilience can add to the same
  /// text.
  void AppendMetrics(PrometheusText& text) const;

  /// AppendStatus()
  ///
  /// Adds a row per method the policies name (an entry's method, or each
  /// method linked into the process of a service an entry names), with its
  /// limits before its first call, and per other method called so far, to
  /// report.server_methods, in method order, each named `name` (e.g. the
  /// server's address) in its `server` field.
  void AppendStatus(StatusReport& report, absl::string_view name = "") const;

  /// Whether every method's calls are counted (ServerResilienceOptions::metrics).
  bool metrics() const;

  /// What the policy file's loader warned about (PolicySet::warnings()) but
  /// settings only a client applies (gRPC's built-in retry of streams), as
  /// CreateResilientChannel() gives a client's.
  const std::vector<std::string>& warnings() const { return warnings_; }

  /// The policies in force (those given at start, or of the last Update()).
  PolicySet policies() const;

  /// Update()
  ///
  /// Puts `policies` (a loaded PolicySet) in force for the calls that arrive
  /// from now on; calls in flight finish under the policies they arrived
  /// with (each call sees one generation: its throttle and fault injection
  /// alike), and none fails or waits because of it. Per method, an unchanged
  /// policy keeps all its state (the scope's limiter with its calls in
  /// flight, its adaptive limit, its rate bucket); a changed one is rebuilt
  /// keeping what stays meaningful: a fixed concurrency limit is resized in
  /// place, so the calls in flight keep and release their slots
  /// (docs/operations.md, "Reloading policies"); counters go on. Returns what
  /// changed, with warnings as AddServerInterceptors() gives them (a
  /// throttle.global without a store). Tells ServerResilienceOptions::events
  /// (OnPolicyReload) on this thread. Thread-safe; updates are serialized.
  absl::StatusOr<PolicyUpdate> Update(const PolicySet& policies);

  /// ReloadFile()
  ///
  /// Loads `path` as PolicySet::FromJsonFile() does and Update()s with it. A
  /// file that fails to load changes nothing: its error (naming the path,
  /// the field and the value) is returned, counted in
  /// grpc_resilience_server_policy_reload_failures_total and told to the
  /// events listener.
  absl::StatusOr<PolicyUpdate> ReloadFile(const std::string& path,
                                          const PolicySet::LoadOptions& options = {});

  /// SetEnforcement()
  ///
  /// Switches a server policy between enforce, shadow and off at runtime,
  /// in place: its limits keep their state (docs/shadow-mode-server.md).
  /// `method` is either a method ("/pkg.Service/Method": the scope whose
  /// throttle applies to it, which may be its whole service's or the
  /// default's, so every method of that scope switches) or a scope as the
  /// policy file names it ("pkg.Service/Method", "pkg.Service/", or "" for
  /// the default entry). `policy`: kThrottle (maxConcurrency, adaptive,
  /// ratePerSecond), kCriticalityShares, kCpu, kPerCaller (with
  /// perCaller.global) or kGlobal. The mode lasts until an Update() whose
  /// file changes that block's `enforcement` (an update that leaves it as it
  /// was keeps the operator's mode). Written to stderr as an operator's
  /// action, with `origin` naming who asked ("api", or the admin endpoint's
  /// "admin endpoint, peer <address>"). Errors: InvalidArgument for kBreaker and kBulkhead (client
  /// policies: ClientResilience); NotFound when no throttle applies to
  /// `method`, or its throttle has no such block (no perCaller, cpu or
  /// global); both name the method and the policy. Thread-safe.
  absl::Status SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                              EnforcementMode mode, absl::string_view origin = "api");

  /// The generation of the policies in force: 1 as started, one more per
  /// Update().
  int64_t policy_generation() const;

  /// FlushEvents()
  ///
  /// Events reach the ResilienceEvents listener on a thread of their own, in
  /// order, after the call that caused them went on; this returns once every
  /// event caused so far was delivered. From the listener: returns at once.
  void FlushEvents();

  /// DrainAndShutdown()
  ///
  /// A graceful shutdown of `server` (whose interceptors are these), done by
  /// `deadline`: Drain(deadline), then server.Shutdown(), releasing the calls
  /// refused during the drain's last moments only once the GOAWAY is out.
  /// Returns when the server is shut down. Use it instead of
  /// server.Shutdown(). docs/server-hardening.md, "Shutdown".
  void DrainAndShutdown(grpc::Server& server, absl::Time deadline);

  /// Drain()
  ///
  /// The first step of a graceful shutdown, before grpc::Server::Shutdown():
  /// the health service says NOT_SERVING; when it said SERVING until then,
  /// calls that arrive are still served for
  /// ServerResilienceOptions::not_serving_grace (at most half of the time to
  /// `deadline`), and then every call that arrives is refused UNAVAILABLE
  /// with a pushback (draining()); it blocks until every
  /// call that arrived before is done, or until `deadline`. Returns whether every call was done. The calls
  /// refused at its end get their answer only at ReleaseRefusedCalls()
  /// (DrainAndShutdown() does it right).
  bool Drain(absl::Time deadline);
  /// ReleaseRefusedCalls()
  ///
  /// Answers the calls Drain() keeps, and every later one at once.
  void ReleaseRefusedCalls();
  /// Whether Drain() has begun (it stays true).
  bool draining() const;
  /// Calls that arrived before Drain() and are not done yet.
  int64_t open_calls() const;

  /// SetServing()
  ///
  /// What the health service (ServerResilienceOptions::health) reports for
  /// `server` (built with these interceptors) as a whole and for every
  /// service registered with RegisterGuardedService(): call
  /// SetServing(server, true) once it is ready to serve (after
  /// BuildAndStart() and any warm-up). Drain() and DrainAndShutdown() report
  /// NOT_SERVING as they begin, for good. `server` must outlive them. Returns
  /// false when the server has no health service.
  bool SetServing(grpc::Server& server, bool serving);

  /// EndHoldsAt()
  ///
  /// Calls held in an injected delay are answered (without their handler) at
  /// `when` at the latest. Call it with the end of a shutdown's grace period,
  /// before Server::Shutdown(). Drain() calls it.
  void EndHoldsAt(absl::Time when);

  /// RegisterGuardedService()
  ///
  /// Registers `service` with `builder` behind a guard, so that a call
  /// rejected by these interceptors never runs its handlers. Use it instead
  /// of builder.RegisterService(service). `Generated` is the class
  /// grpc_cpp_plugin generated for the proto service (cache::v1::CacheService);
  /// `service` and this object must outlive the server. InvalidArgument, and
  /// nothing registered, for a service the guard cannot serve.
  ///
  /// Example:
  /// \code
  ///   auto resilience = resilience::AddServerInterceptors(builder, policies);
  ///   MyCacheService service;
  ///   absl::Status s =
  ///       resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
  /// \endcode
  template <typename Generated, typename Impl>
  absl::Status RegisterGuardedService(grpc::ServerBuilder& builder, Impl* service) {
    static_assert(std::is_base_of_v<typename Generated::Service, Impl>,
                  "service must implement Generated::Service (or one of its callback forms)");
    return RegisterGuardedService(builder, service, Generated::service_full_name());
  }
  /// The same, naming the proto service ("cache.v1.CacheService").
  absl::Status RegisterGuardedService(grpc::ServerBuilder& builder, grpc::Service* service,
                                      absl::string_view full_name);

  /// The engine behind this object, for the library's own code (its type is
  /// declared in no installed header).
  const std::shared_ptr<ServerResilienceImpl>& impl() const { return impl_; }

 private:
  const std::shared_ptr<ServerResilienceImpl> impl_;
  const std::vector<std::string> warnings_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SERVER_RESILIENCE_H_
