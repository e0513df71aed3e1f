// File: experiments/fleet/fleet_policy.h
//
// The configurations the fleet simulator compares, each built from a policy
// file through the library's policy loader (PolicyTable), as a user's
// channel and server build theirs:
//   none              no retry; the call's timeout (2 s) only;
//   naive             5 attempts, per-attempt timeout 0.2 s, backoff 20 ms
//                     doubling to 0.2 s, UNAVAILABLE and DEADLINE_EXCEEDED
//                     retried, no throttling of any kind (what gRPC's retry
//                     without retryThrottling, or a retry loop, does; the
//                     library would add its default retryBudget to such an
//                     entry, which is removed here on purpose);
//   grpc-throttled    naive plus gRPC's retryThrottling {maxTokens 10,
//                     tokenRatio 0.1} (gRFC A6);
//   recommended       the shipped policies.json's Get entry (3 attempts,
//                     per-attempt 0.2 s, SRE breaker, retryThrottling 10 /
//                     0.1), servers without limits;
//   recommended+pushback  the same with the servers' shipped throttle
//                     (maxConcurrency 64): a rejection is RESOURCE_EXHAUSTED
//                     with a grpc-retry-pushback-ms, as ThrottleStage
//                     sends it;
//   recommended+adaptive  the same with the adaptive (gradient) limit,
//                     {"adaptive": {}}, instead.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_POLICY_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_POLICY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/policy/method_policy.h"
#include "src/retry/retry_decider.h"

namespace fleet {

// The method every simulated call is (the shipped file's Get).
inline constexpr char kMethod[] = "/cache.v1.CacheService/Get";

// A configuration, resolved: what every client and every server runs.
struct FleetPolicy {
  std::string name;
  // The client: the retry decider's options (its throttle pointer is null
  // here; each client gets its own RetryBudget from `throttle`), the
  // channel's retryThrottling, the call's timeout, the per-attempt timeout,
  // and the breaker.
  resilience::RetryDecider::Options retry;
  std::optional<resilience::RetryBudget::Options> throttle;
  absl::Duration timeout = absl::Seconds(2);
  std::optional<absl::Duration> per_attempt_timeout;
  resilience::BreakerSettings breaker;
  // The servers' throttle; none: every call is admitted.
  std::optional<resilience::ThrottleSettings> server_throttle;
  // The policy files it was built from ("" server: no throttle), for a run
  // over real gRPC (fleet_grpc_run.h); an empty client file: the policy
  // was changed after loading and has no file (it cannot run over gRPC).
  std::string client_json;
  std::string server_json;
  // The clients' policy file had its entry's retryBudget removed (naive),
  // which the library's own loader would put back: no file says this.
  bool budget_stripped = false;
};

// FromPolicyFiles()
//
// The policy of kMethod in `client_json` for the clients (with its
// retryThrottling), the throttle of kMethod in `server_json` for the servers
// ("" = none). `strip_budget`: without the entry's retryBudget (naive).
absl::StatusOr<FleetPolicy> FromPolicyFiles(const std::string& name, const std::string& client_json,
                                            const std::string& server_json, bool strip_budget);

// The six configurations above, in that order.
absl::StatusOr<std::vector<FleetPolicy>> StandardPolicies();

// Variants that isolate a cause, run by name only: recommended-no-breaker
// (the shipped Get entry without its breaker), recommended-window-4s (its
// SRE breaker with a 4 s window instead of 10 s, same 0.25 s buckets),
// recommended-method-breaker (the shipped entry with "endpoints":
// {"enabled": false}: one breaker per client, no per-server breakers),
// recommended-bucket-only (the shipped file without Get's retryBudget, so
// gRPC's retryThrottling bucket alone limits retries: the file as shipped
// before the windowed budget), and naive-budget-1000 (naive with the widest retryBudget the library accepts,
// {"maxTokens": 1000, "tokenRatio": 1}: the library's loader gives every
// retried entry of a file without retryThrottling a budget, so this is the
// closest to naive a real channel of this library can run; the real-gRPC
// check runs it on both sides).
absl::StatusOr<std::vector<FleetPolicy>> DiagnosticPolicies();

// WithMaxTokens()
//
// "recommended-tokens-<n>": the shipped policies.json with its
// retryThrottling's maxTokens set to `n` (its tokenRatio kept), the
// burst of retries each client may send before the ratio limits it;
// InvalidArgument from the loader when `n` is out of [1, 1000].
absl::StatusOr<FleetPolicy> WithMaxTokens(int max_tokens);

// One of StandardPolicies() or DiagnosticPolicies() by name, or
// "recommended-tokens-<n>" (WithMaxTokens()); NotFound naming it otherwise.
absl::StatusOr<FleetPolicy> StandardPolicy(const std::string& name);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_POLICY_H_
