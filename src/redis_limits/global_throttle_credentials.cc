// CheckGlobalThrottleCredentials() of the public grpc_resilience/redis_limits.h.

#include "grpc_resilience/redis_limits.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/redis_limits/redis_connection.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

absl::Status CheckGlobalThrottleCredentials(const PolicySet& policies) {
  absl::flat_hash_set<std::string> checked;
  std::vector<const GlobalThrottleSettings*> stores;
  for (const MethodPolicy& policy : PolicySetAccess::Table(policies).policies()) {
    if (!policy.throttle) continue;
    if (policy.throttle->global) stores.push_back(&*policy.throttle->global);
    if (policy.throttle->per_caller && policy.throttle->per_caller->global) {
      stores.push_back(&*policy.throttle->per_caller->global);
    }
  }
  for (const GlobalThrottleSettings* store : stores) {
    const GlobalThrottleSettings& g = *store;
    if (g.password_env.empty() && g.password_file.empty()) continue;
    if (!checked
             .insert(absl::StrCat(g.host, ":", g.port, "\n", g.username, "\n", g.password_env,
                                  "\n", g.password_file))
             .second) {
      continue;
    }
    absl::StatusOr<std::string> password = ReadGlobalThrottlePassword(g);
    if (!password.ok()) return absl::InvalidArgumentError(password.status().message());
    absl::StatusOr<std::unique_ptr<RedisConnection>> connection =
        RedisConnection::Connect(g.host, g.port, g.timeout);
    if (!connection.ok()) continue;  // unreachable: the local share's business at run time
    const absl::Status auth =
        (*connection)->Authenticate(g.username, *password, GlobalThrottlePasswordSource(g));
    if (auth.code() == absl::StatusCode::kPermissionDenied) {
      return absl::PermissionDeniedError(absl::StrCat(g.path, ": ", auth.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace resilience
