// File: src/policy/derived_outlier_detection.h
//
// The outlier detection the library gives a round_robin channel with
// health checking (healthCheckConfig) whose policy file sets none (without
// health, ejection made a rolling restart fail calls: docs/replicas.md): gRPC's outlier_detection_experimental (gRFC A50)
// around the file's round_robin, with its failure-percentage ejection
// derived from a breaker of the file, so that one bad replica leaves the
// rotation (gRPC ejects it) instead of tripping the method's breaker for
// every replica. docs/replicas.md, "Outlier detection by default".
//
// Which breaker: the default entry's ({}), else the first entry's with one
// (file order). None: no outlier detection is added. The mapping:
//
//   breaker                         outlier_detection_experimental
//   failureRateThreshold r          failurePercentageEjection.threshold
//     (sre: 1 - 1/k)                  = ceil(100 r) - 1 (gRPC ejects above it)
//   window / buckets                interval (in [100ms, 10s])
//   minRequests m (sre: protection)    requestVolume = max(2, ceil(m x interval / window))
//   openDuration (sre: window)      baseEjectionTime
//   maxOpenDuration (sre: 300s)     maxEjectionTime (at least baseEjectionTime)
//   -                               maxEjectionPercent 50, minimumHosts 2,
//                                   enforcementPercentage 100
//
// maxEjectionPercent 50 keeps at least half of the replicas in the rotation
// whatever they do (gRPC ejects one more only while less than that share is
// out): when they all fail, the calls go on to the breaker, which then
// rejects locally as it does for one backend.
//
// To opt out, write an outlier_detection_experimental without ejection
// algorithms around round_robin: gRPC then ejects nothing.

#ifndef GRPC_RESILIENCE_SRC_POLICY_DERIVED_OUTLIER_DETECTION_H_
#define GRPC_RESILIENCE_SRC_POLICY_DERIVED_OUTLIER_DETECTION_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"

namespace resilience {

// DerivedOutlierDetection
//
// Stateless; thread-safe.
class DerivedOutlierDetection {
 public:
  static constexpr int kMaxEjectionPercent = 50;
  static constexpr int kMinimumHosts = 2;
  static constexpr int kMinRequestVolume = 2;
  static constexpr absl::Duration kMinInterval = absl::Milliseconds(100);
  static constexpr absl::Duration kMaxInterval = absl::Seconds(10);
  static constexpr absl::Duration kSreMaxEjection = absl::Seconds(300);

  // Source()
  //
  // The policy whose breaker the outlier detection follows; null when no
  // entry has a breaker.
  static const MethodPolicy* Source(const PolicyTable& policies);

  // Entry()
  //
  // The loadBalancingConfig entry {"outlier_detection_experimental": {...}}
  // derived from `breaker`, with `child` (one entry's JSON, e.g.
  // {"round_robin": {}}) as its childPolicy; nullopt for BreakerKind::kNone.
  static std::optional<std::string> Entry(const BreakerSettings& breaker,
                                          const std::string& child);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_DERIVED_OUTLIER_DETECTION_H_
