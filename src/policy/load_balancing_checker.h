// File: src/policy/load_balancing_checker.h
//
// Checks a policy file's loadBalancingPolicy, loadBalancingConfig and
// healthCheckConfig against what gRPC 1.51's core accepts, so that a file
// that loads gives the channel a service config gRPC takes (a service config
// gRPC refuses fails every call of the channel).
//
// The policies (checked on Debian 12's libgrpc 1.51.1, docs/replicas.md):
//  - pick_first, round_robin: no fields.
//  - outlier_detection_experimental (gRFC A50): interval, baseEjectionTime,
//    maxEjectionTime (durations), maxEjectionPercent (0-100),
//    successRateEjection {stdevFactor, enforcementPercentage, minimumHosts,
//    requestVolume}, failurePercentageEjection {threshold,
//    enforcementPercentage, minimumHosts, requestVolume}, childPolicy
//    (required: a list like loadBalancingConfig).
//  - Registered but fed by xDS (their children are named by the resolver's
//    address attributes): priority_experimental, weighted_target_experimental,
//    rls_experimental, cds_experimental, xds_*, and ring_hash_experimental
//    (it needs the request hash xDS routing sets; a call on a plain channel
//    with it crashed gRPC 1.51): refused with that reason.
//  - grpclb: childPolicy (pick_first or round_robin), serviceName; without
//    balancer addresses it uses the target's (checked on a plain channel).
//    Not by loadBalancingPolicy: gRPC 1.51 refuses it there ("requires a
//    config") and fails every call of the channel.
// gRPC skips names it does not know and ignores fields it does not know;
// here both are errors naming the JSON path, since in a policy file they
// are typos. A loadBalancingConfig entry after the first is never used
// (every name is known), which is a warning.
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
