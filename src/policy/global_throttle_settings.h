// File: src/policy/global_throttle_settings.h
//
// The resolved settings of a throttle.global entry (a rate limit shared by a
// fleet, kept in Redis). See GlobalThrottlePolicy in
// proto/resilience/v1/policy.proto for the meaning of each field.

#ifndef GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_SETTINGS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "grpc_resilience/enforcement_mode.h"

namespace resilience {

struct GlobalThrottleSettings {
  // Where the policy file set it ("methodConfig[0].throttle.global"), for
  // messages.
  std::string path;
  // The Redis server.
  std::string host;
  int port = 6379;
  // The Redis key; empty: "grpc_resilience:" + the scope's name.
  std::string key;
  // The fleet's bucket: GlobalRateLimiter::Validate() accepts these (with
  // expected_replicas and lease_interval).
  double rate_per_second = 0;
  int64_t burst = 1;
  int expected_replicas = 1;
  absl::Duration lease_interval = absl::Milliseconds(100);
  // Connect timeout, and deadline of each round trip.
  absl::Duration timeout = absl::Milliseconds(200);
  // Redis AUTH: the ACL user (empty: the default user), and where the
  // password is, never the password itself: the name of an environment
  // variable or the path of a file holding it (at most one; neither: no
  // AUTH). ReadGlobalThrottlePassword() reads it.
  std::string username;
  std::string password_env;
  std::string password_file;
  // throttle.global.enforcement (a perCaller.global follows
  // perCaller.enforcement and keeps kEnforce here).
  EnforcementMode enforcement = EnforcementMode::kEnforce;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_SETTINGS_H_
