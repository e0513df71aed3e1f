// File: src/policy/policy_lint.h
//
// The loader's lint pass: settings a methodConfig entry sets that load but
// can have no effect (or hold a trap), found over the entry as built.

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_LINT_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_LINT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/method_policy.h"

namespace resilience {

// PolicyLint
//
// Runs after PolicyTableBuilder has read and checked an entry (no error is
// possible here): looks at the entry as written (`entry`, for what the file
// set) and as built (`policy`, for the values in force) and appends one
// warning per finding, each starting with the setting's JSON path. The
// findings, in this order: retryPolicy settings without effect (a
// perAttemptTimeout not shorter than the timeout or whose end is not
// retried, maxAttempts 1, jitter with fullJitter); a retryBudget of an entry
// that neither retries nor hedges; breaker.successCodes listing OK; a
// threeState maxOpenDuration with openDurationMultiplier 1; throttle.adaptive
// fields the chosen algorithm does not read; a bulkhead's maxQueue or
// maxWait that cannot act; a faultInjection that injects nothing or a 0s
// delay; a long injected delay in front of a concurrency limit; the breaker
// timings AppendBreakerTimingWarnings() finds.
//
// Example:
//   PolicyLint::Entry(entry, policy, "methodConfig[0]", warnings);
//
// Thread-safety: stateless.
class PolicyLint {
 public:
  PolicyLint() = delete;

  static void Entry(const v1::MethodConfig& entry, const MethodPolicy& policy,
                    const std::string& path, std::vector<std::string>& warnings);

  // The file's own findings, after its entries (`policies`): a
  // retryThrottling that no entry's retries or hedges use.
  static void File(const v1::PolicyFile& file, const std::vector<MethodPolicy>& policies,
                   std::vector<std::string>& warnings);

  // Whether `policy` makes more than one attempt of a call: retries
  // (maxAttempts above 1) or hedges.
  static bool Reissues(const MethodPolicy& policy);

  // An injected delay at least this long in front of a concurrency limit is
  // warned about: on gRPC 1.51's callback API a caller that cancels during
  // the delay is not seen before the delay ends (no cancellation reaches a
  // call whose handler has not started), so its slot stays taken that long.
  static constexpr absl::Duration kLongHeldDelay = absl::Seconds(1);

 private:
  // `timeout` is the entry's, written at `timeout_path`.
  static void RetryFindings(const v1::RetryPolicy& p, const RetrySettings& r,
                            const std::string& path, std::optional<absl::Duration> timeout,
                            const std::string& timeout_path, std::vector<std::string>& warnings);
  static void BreakerFindings(const v1::BreakerPolicy& p, const std::string& path,
                              std::vector<std::string>& warnings);
  static void BulkheadFindings(const v1::BulkheadPolicy& p, const Bulkhead::Options& o,
                               const std::string& path, std::vector<std::string>& warnings);
  static void AdaptiveFindings(const v1::AdaptiveThrottle& p, const std::string& path,
                               std::vector<std::string>& warnings);
  static void FaultFindings(const v1::FaultInjectionPolicy& p, const FaultInjectionSettings& f,
                            const std::string& path, std::vector<std::string>& warnings);
  static void DelayFindings(const MethodPolicy& policy, const std::string& path,
                           std::vector<std::string>& warnings);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_LINT_H_
