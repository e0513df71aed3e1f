// File: src/policy/policy_table_builder.h
//
// Builds a PolicyTable from a parsed policy file (resilience.v1.PolicyFile),
// for PolicyTable::FromJsonString(). Its parts are implemented by meaning:
// the file and its entries (policy_table_builder.cc), the client's settings,
// retry and breaker (policy_table_builder_client.cc), the server's, throttle
// and fault injection (policy_table_builder_server.cc).

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_BUILDER_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_BUILDER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/field_readers.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"

namespace resilience {

// Turns a parsed PolicyFile into a PolicyTable, applying defaults and checking
// every rule; the first error wins. Paths in messages use JSON names. The
// settings of the core's classes (breakers, backoff, retry budget, token
// bucket, concurrency limiter) are checked by the classes' own Validate(),
// whose messages are rewritten to the file's paths (AtPath()), so that
// whatever loads, their Create() accepts.
class PolicyTableBuilder {
 public:
  absl::StatusOr<PolicyTable> Build(const v1::PolicyFile& file);

 private:
  // Every scope with a throttle.global: the names of the file, and the
  // default entry's "".
  std::vector<GlobalThrottleScope> GlobalThrottleScopes() const;

  // A setting that is accepted but ignored or has no effect; `message` starts
  // with its JSON path.
  void Warn(std::string message) { set_.warnings_.push_back(std::move(message)); }

  // A gRPC service config setting grpc-resilience does not apply.
  void NotApplied(absl::string_view path, absl::string_view hint = "");

  template <typename T>
  static absl::Status Invalid(absl::string_view path, absl::string_view rule, const T& value) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": must be ", rule, ", got ", value));
  }

  static std::string Show(const google::protobuf::Duration& d);

  // A fraction in [0, 1]; NaN fails.
  static absl::Status CheckFraction(absl::string_view path, double value);

  // AtPath()
  //
  // A core class's Validate() names its fields in snake_case after a prefix
  // of its own ("sre.max_drop_probability", "backoff.initial_backoff") or
  // none ("rate_per_second"); the file says
  // "methodConfig[0].breaker.sre.maxDropProbability". Rewrites every
  // `prefix` in the message to `path` + "." (with no prefix, puts `path` +
  // "." in front) and the names to JSON's camelCase.
  static absl::Status AtPath(const absl::Status& s, absl::string_view prefix,
                             absl::string_view path);

  // Sets `out` from `read` (a StatusOr) when it is OK; returns its status.
  template <typename T, typename R>
  static absl::Status Assign(R read, T& out) {
    if (!read.ok()) return read.status();
    out = *std::move(read);
    return absl::OkStatus();
  }

  // One methodConfig entry at `path`: its settings, in file order of the
  // schema (the first error wins), then PolicyLint over the result, then its
  // names.
  absl::Status AddEntry(const v1::MethodConfig& entry, const std::string& path);
  // timeout, or its deprecated alias deadline.
  absl::Status ReadTimeout(const v1::MethodConfig& entry, const std::string& path,
                           MethodPolicy& policy);
  // retryPolicy and retryBudget.
  absl::Status ReadRetries(const v1::MethodConfig& entry, const std::string& path,
                           MethodPolicy& policy);
  // waitForReady, breaker, criticality, throttle, bulkhead, fallback,
  // faultInjection, the message sizes and hedgingPolicy.
  absl::Status ReadOthers(const v1::MethodConfig& entry, const std::string& path,
                          MethodPolicy& policy);
  // The entry's names, for the policy at `index`: each once in the file.
  absl::Status AddNames(const v1::MethodConfig& entry, const std::string& path, size_t index);

  absl::StatusOr<RetrySettings> Retry(const v1::RetryPolicy& p, const std::string& path);

  absl::Status Breaker(const v1::BreakerPolicy& p, const std::string& path, BreakerSettings& out);
  static absl::Status ReadOutcomeCodes(const v1::BreakerPolicy& p, const std::string& path,
                                       BreakerSettings& out);
  // breaker.recoveryProbe, after the breaker's kind is known.
  absl::Status RecoveryProbeSettings(const v1::RecoveryProbePolicy& p,
                                     const std::string& breaker_path, BreakerSettings& out);

  // Copies the set fields onto `o` (which holds the defaults), then lets the
  // breaker's own validation speak, with the JSON path in front.
  absl::Status Sre(const v1::SreBreakerPolicy& p, const std::string& path, SreBreaker::Options& o);

  // The bounds of the durations are checked here (its Validate() checks how
  // they relate to each other), the rest by ThreeStateBreaker::Validate().
  absl::Status ThreeState(const v1::ThreeStateBreakerPolicy& p, const std::string& path,
                          ThreeStateBreaker::Options& o);

  // The limits: each checked by the class that enforces it
  // (FixedConcurrencyLimiter, TokenBucket), so that whatever loads, their
  // Create() accepts.
  absl::StatusOr<ThrottleSettings> Throttle(const v1::ThrottlePolicy& p, const std::string& path);
  // adaptive, maxConcurrency, ratePerSecond and burst, the pushback bounds.
  absl::Status ReadThrottleLimits(const v1::ThrottlePolicy& p, const std::string& path,
                                  ThrottleSettings& t);
  // criticalityShares, global, perCaller, cpu, loadReport, deadlineAdmission.
  absl::Status ReadThrottleBlocks(const v1::ThrottlePolicy& p, const std::string& path,
                                  ThrottleSettings& t);
  // throttle.cpu at `path`: its threshold, required.
  static absl::Status ReadCpu(const v1::CpuThrottle& p, const std::string& path,
                              ThrottleSettings& t);
  // methodConfig[].criticality: the levels by name, the default at most the
  // ceiling.
  static absl::StatusOr<CriticalitySettings> ReadCriticality(const v1::CriticalityPolicy& p,
                                                             const std::string& path);
  // throttle.criticalityShares over the defaults, CriticalityShares::Validate().
  static absl::StatusOr<CriticalityShares> ReadCriticalityShares(const v1::CriticalityShares& p,
                                                                 const std::string& path);
  // The `enforcement` of throttle, criticalityShares, cpu and global.
  static absl::Status ReadThrottleEnforcement(const v1::ThrottlePolicy& p, const std::string& path,
                                              ThrottleSettings& t);

  // throttle.adaptive: the algorithm's options over their defaults,
  // checked by the limiter's own Validate(). With maxConcurrency too: an
  // error (two concurrency limits, one of them fixed, is a contradiction).
  absl::StatusOr<AdaptiveLimitSettings> AdaptiveLimit(const v1::AdaptiveThrottle& p,
                                                      const std::string& path,
                                                      bool has_max_concurrency,
                                                      const std::string& throttle_path);

  // bulkhead: checked by Bulkhead::Validate() and bounded here; a
  // maxQueue or maxWait that can have no effect is a warning.
  absl::StatusOr<Bulkhead::Options> ReadBulkhead(const v1::BulkheadPolicy& p,
                                                 const std::string& path);

  absl::StatusOr<FaultInjectionSettings> FaultInjection(const v1::FaultInjectionPolicy& p,
                                                        const std::string& path);

  // retryThrottling or a retryBudget at `path`: the set fields over
  // RetryBudget::Options' defaults, checked by RetryBudget itself.
  absl::StatusOr<RetryBudgetSettings> ReadRetryBudget(const v1::RetryThrottling& p,
                                                      const std::string& path);
  // A retryBudget with a ttl at `path` (WindowedRetryBudget).
  absl::StatusOr<WindowedRetryBudget::Options> ReadWindowedRetryBudget(
      const v1::RetryThrottling& p, const std::string& path);
  // A tokenRatio with more than three decimals is kept to three, as gRPC
  // keeps it (RetryBudget::RatioMilli()): says so, with the value used.
  void WarnIfTokenRatioRounded(const v1::RetryThrottling& p, const std::string& path);

  PolicyTable set_;
  std::string default_path_;
  absl::flat_hash_map<std::string, std::string> name_paths_;  // name -> where
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_BUILDER_H_
