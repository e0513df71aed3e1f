// File: src/policy/load_balancing_checker.h
//
// Checks a policy file's loadBalancingPolicy, loadBalancingConfig and
// healthCheckConfig against what gRPC 1.51's core accepts, so that a file
// that loads gives the channel a service config gRPC takes (a service config
// gRPC refuses fails every call of the channel).
//
// What it accepts, refuses and warns about (checked on Debian 12's libgrpc
// 1.51.1): docs/replicas.md. gRPC skips names and fields it does not know;
// here both are errors naming the JSON path, since in a policy file they
// are typos.
//
// Example:
//   std::vector<std::string> warnings;
//   absl::StatusOr<LoadBalancingSettings> lb = LoadBalancingChecker::Check(file, warnings);
//   // InvalidArgument: loadBalancingConfig[0].outlier_detection_experimental.interval:
//   //   "5" is not a duration (gRPC wants seconds and an "s", e.g. "0.5s")

#ifndef GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_CHECKER_H_
#define GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_CHECKER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/load_balancing_settings.h"

namespace resilience {

// LoadBalancingChecker
//
// Stateless; thread-safe.
class LoadBalancingChecker {
 public:
  // Check()
  //
  // The file's load-balancing settings, or InvalidArgument
  // "<path>: <what is wrong>, got <value>". Appends warnings (settings
  // without effect) to `warnings`, each starting with its path.
  static absl::StatusOr<LoadBalancingSettings> Check(const v1::PolicyFile& file,
                                                     std::vector<std::string>& warnings);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_CHECKER_H_
