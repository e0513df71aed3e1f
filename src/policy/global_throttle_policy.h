// File: src/policy/global_throttle_policy.h
//
// The policy loader's reading of throttle.global.

#ifndef GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_
#define GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/limits/global_rate_limiter.h"
#include "src/policy/global_throttle_settings.h"

namespace resilience {
namespace v1 {
class GlobalThrottlePolicy;
}  // namespace v1

// ReadGlobalThrottle()
//
// The settings of `p`, found at `path` ("methodConfig[0].throttle.global"),
// with every default applied; InvalidArgument naming the field's path and
// value for a missing required field or one out of its bounds. Whatever it
// accepts, GlobalRateLimiter::Create() accepts.
absl::StatusOr<GlobalThrottleSettings> ReadGlobalThrottle(const v1::GlobalThrottlePolicy& p,
                                                          absl::string_view path);

// ReadGlobalThrottlePassword()
//
// The Redis password of `g`: the value of its passwordEnv variable, or the
// contents of its passwordFile (less one trailing newline); empty when it
// sets neither. FailedPrecondition naming the field's path and the
// variable or file (never the password) when it is not set, empty, or
// cannot be read. ReadGlobalThrottle() calls it once, the Redis client at
// each connect.
absl::StatusOr<std::string> ReadGlobalThrottlePassword(const GlobalThrottleSettings& g);

// Where the password of `g` comes from, for messages (never the password):
// `methodConfig[0].throttle.global.passwordEnv (REDIS_PW)` or
// `....passwordFile ("/run/secrets/redis")`; empty without one.
std::string GlobalThrottlePasswordSource(const GlobalThrottleSettings& g);

// LimiterOptions()
//
// The GlobalRateLimiter options of `g` (without log and name), which
// GlobalRateLimiter::Validate() accepts for settings ReadGlobalThrottle()
// returned. Unused tokens live max(1s, leaseInterval).
GlobalRateLimiter::Options LimiterOptions(const GlobalThrottleSettings& g);

// One scope's throttle.global, for CheckGlobalThrottleKeys(): the scope's
// name (as DefaultGlobalThrottleKey() takes it) and its settings.
struct GlobalThrottleScope {
  std::string scope;
  const GlobalThrottleSettings* settings;
  // A throttle.perCaller.global: its buckets are the keys under
  // PerCallerFleetPrefix(), compared as the prefix and ":*".
  bool per_caller = false;
};

// CheckGlobalThrottleKeys()
//
// One Redis key (at one redis address) is one bucket: scopes may share it
// (one budget for all of them) only with the same ratePerSecond and burst,
// since each lease refills the bucket with its caller's numbers; so may two
// perCaller.global with one prefix (one bucket per caller key for both). Two that
// differ are InvalidArgument naming both paths, the key and both values.
// A perCaller.global's caller keys may hold ':', so a key (or another
// prefix) under its prefix and ':' would share a caller's bucket: that is
// InvalidArgument too, naming both paths, the key and the caller.
// Deterministic whatever the order of `scopes`.
absl::Status CheckGlobalThrottleKeys(std::vector<GlobalThrottleScope> scopes);

// The key of a scope whose policy leaves `key` out: "grpc_resilience:" and
// the scope ("*" for the default entry's empty one).
std::string DefaultGlobalThrottleKey(absl::string_view scope);

// PerCallerFleetPrefix()
//
// The prefix of the Redis keys of throttle.perCaller.global's buckets in
// `scope`: its `key` when set, else DefaultGlobalThrottleKey(scope) and
// ":caller". A caller key's bucket is the prefix, ':' and the stored key
// (PerCallerLimits::StoredKey(): printable, at most 128 bytes, hashed
// otherwise); the default bucket's is the prefix and ":#default", which no
// stored key can be.
std::string PerCallerFleetPrefix(const GlobalThrottleSettings& g, absl::string_view scope);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_
