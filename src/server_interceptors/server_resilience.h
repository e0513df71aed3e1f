// File: src/server_interceptors/server_resilience.h
//
// The state the server interceptors share: per-method settings resolved from
// the policies, the limiters (per method, or per service / default scope when
// the policy names a whole service or is the default), and per-method
// counters for metrics and tests.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "src/breaker/clock.h"
#include "src/breaker/fixed_concurrency_limiter.h"
#include "src/breaker/mutex.h"
#include "src/breaker/random_source.h"
#include "src/breaker/token_bucket.h"
#include "src/grpc_common/method_cache.h"
#include "src/policy/policy_set.h"
#include "src/server_interceptors/proceed_executor.h"

namespace resilience {

// Counters of one method, as read by ServerResilience::Stats().
struct ServerMethodStats {
  int64_t admitted = 0;
  int64_t rejected_concurrency = 0;
  int64_t rejected_rate = 0;
  // Admitted calls not finished yet (handler running or call still open).
  int64_t in_flight = 0;
  int64_t faults_aborted = 0;
  int64_t faults_delayed = 0;
  // Delayed calls whose deadline passed during the delay: handler skipped.
  int64_t expired_while_delayed = 0;
};

// The limits of one scope: a method, a whole service, or the default.
struct ScopeLimits {
  std::string scope;
  std::unique_ptr<FixedConcurrencyLimiter> concurrency;  // null: no limit
  std::unique_ptr<TokenBucket> rate;                     // null: no limit
  // Smoothed latency of admitted calls, microseconds; the pushback hint for
  // concurrency rejections. Updated without a lock; a lost update is harmless.
  std::atomic<int64_t> smoothed_latency_us{0};
};

// What the interceptors of one method need, resolved once per method.
struct ServerMethodState {
  std::string method;
  ScopeLimits* limits = nullptr;                       // null: no throttle
  const FaultInjectionSettings* fault = nullptr;      // null: no faults
  std::unique_ptr<RandomSource> fault_random;
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> rejected_concurrency{0};
  std::atomic<int64_t> rejected_rate{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> faults_aborted{0};
  std::atomic<int64_t> faults_delayed{0};
  std::atomic<int64_t> expired_while_delayed{0};
};

// ServerResilience
//
// Created by AddServerInterceptors(); shared by its factories and returned to
// the caller for Stats(). Methods are resolved on their first call and kept
// in a MethodCache (lock-free lookups). This class is thread-safe.
class ServerResilience {
 public:
  ServerResilience(PolicySet policies, Clock& clock);

  // ForMethod()
  //
  // The state of `method` ("/pkg.Service/Method"), or null when its policy
  // has neither a throttle nor fault injection.
  ServerMethodState* ForMethod(const char* method) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether any policy has a throttle / fault injection at all; the factories
  // skip the lookup when not.
  bool any_throttle() const { return any_throttle_; }
  bool any_fault_injection() const { return any_fault_injection_; }

  // Stats()
  //
  // The counters of `method`; all zero if it has not been called.
  ServerMethodStats Stats(absl::string_view method) ABSL_LOCKS_EXCLUDED(mu_);

  Clock& clock() { return clock_; }
  // Where held-back calls are resumed (see ProceedExecutor).
  ProceedExecutor& executor() { return executor_; }
  const PolicySet& policies() const { return policies_; }

 private:
  ScopeLimits* LimitsFor(absl::string_view scope, const ThrottleSettings& settings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::unique_ptr<ServerMethodState> Resolve(const char* method) ABSL_LOCKS_EXCLUDED(mu_);

  const PolicySet policies_;
  Clock& clock_;
  const bool any_throttle_;
  const bool any_fault_injection_;
  MethodCache<ServerMethodState> methods_;
  Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<ScopeLimits>> scopes_ ABSL_GUARDED_BY(mu_);
  // Last member: destroyed first, joining its threads while the rest is alive.
  ProceedExecutor executor_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_RESILIENCE_H_
