// File: src/global_limits/global_throttle_credentials.h
//
// A server's start-up check of the Redis credentials its throttle.global
// policies name.

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_THROTTLE_CREDENTIALS_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_THROTTLE_CREDENTIALS_H_

#include "absl/status/status.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

// CheckGlobalThrottleCredentials()
//
// For each Redis and set of credentials that `policies`' throttle.global
// entries name (once each), one connect and AUTH within the entry's
// timeout. PermissionDenied "<path>: AUTH as user 'u' with the password of
// <path>.passwordFile ("...") refused by host:port: WRONGPASS ..." when
// Redis refuses them (never the password); InvalidArgument when the
// password can no longer be read. A Redis that cannot be reached or does
// not answer in time is not an error here (OK): at run time the scope then
// admits its local share until Redis answers (docs/global-rate-limit.md).
// Blocks for up to the timeouts of the entries with credentials.
absl::Status CheckGlobalThrottleCredentials(const PolicySet& policies);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_THROTTLE_CREDENTIALS_H_
