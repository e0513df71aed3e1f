#include "src/policy/derived_outlier_detection.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"

namespace resilience {

using internal::GrpcJsonDuration;

const MethodPolicy* DerivedOutlierDetection::Source(const PolicyTable& policies) {
  const MethodPolicy* fallback = policies.Find("").policy;
  if (fallback != nullptr && fallback->breaker.kind != BreakerKind::kNone) return fallback;
  for (const MethodPolicy& policy : policies.policies()) {
    if (policy.breaker.kind != BreakerKind::kNone) return &policy;
  }
  return nullptr;
}

std::optional<std::string> DerivedOutlierDetection::Entry(const BreakerSettings& breaker,
                                                          const std::string& child) {
  double rate = 0;
  int64_t min_calls = 0;
  absl::Duration window, bucket, base, max;
  switch (breaker.kind) {
    case BreakerKind::kNone:
      return std::nullopt;
    case BreakerKind::kThreeState: {
      const ThreeStateBreaker::Options& o = breaker.three_state;
      rate = o.failure_rate_threshold;
      min_calls = o.min_requests;
      window = o.window;
      bucket = o.window / std::max(o.buckets, 1);
      base = o.open_duration;
      max = std::max(o.max_open_duration, o.open_duration);
      break;
    }
    case BreakerKind::kSre: {
      const SreBreaker::Options& o = breaker.sre;
      rate = 1.0 - 1.0 / o.k;  // it drops once failures pass this share
      min_calls = o.protection;
      window = o.window;
      bucket = o.window / std::max(o.buckets, 1);
      base = o.window;
      max = std::max(kSreMaxEjection, o.window);
      break;
    }
  }
  const absl::Duration interval = std::clamp(bucket, kMinInterval, kMaxInterval);
  const int threshold =
      std::clamp(static_cast<int>(std::ceil(rate * 100.0 - 1e-9)) - 1, 0, 99);
  const int64_t volume = std::max<int64_t>(
      kMinRequestVolume,
      static_cast<int64_t>(std::ceil(static_cast<double>(min_calls) *
                                     absl::FDivDuration(interval, window) - 1e-9)));
  return absl::StrCat(
      "{\"outlier_detection_experimental\": {\"interval\": ", GrpcJsonDuration(interval),
      ", \"baseEjectionTime\": ", GrpcJsonDuration(base),
      ", \"maxEjectionTime\": ", GrpcJsonDuration(max),
      ", \"maxEjectionPercent\": ", kMaxEjectionPercent,
      ", \"failurePercentageEjection\": {\"threshold\": ", threshold,
      ", \"enforcementPercentage\": 100, \"minimumHosts\": ", kMinimumHosts,
      ", \"requestVolume\": ", volume, "}, \"childPolicy\": [", child, "]}}");
}

}  // namespace resilience
