#include "src/policy/channel_service_config.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/policy/derived_outlier_detection.h"
#include "src/policy/json_text.h"

namespace resilience {

ChannelServiceConfig ChannelServiceConfig::Build(const PolicyTable& policies,
                                                 const MethodCatalog& catalog) {
  ChannelServiceConfig config(BuiltInRetryConfig::Build(policies, catalog));
  std::vector<std::string> members;
  if (!config.retries_.members().empty()) members.push_back(config.retries_.members());

  const LoadBalancingSettings& lb = policies.load_balancing();
  std::vector<std::string> entries = lb.configs;
  if (entries.empty() && lb.policy == "round_robin") entries.push_back("{\"round_robin\": {}}");
  // Only with health checking: without it, ejection turns a rolling restart
  // into failed calls (a draining replica refuses calls, is ejected, and is
  // still ejected when the next one drains; docs/replicas.md measured 3,034
  // of 10,315 calls failed against 159 without the outlier detection).
  if (lb.root == "round_robin" && !lb.outlier_detection && lb.health_check_service.has_value()) {
    if (const MethodPolicy* source = DerivedOutlierDetection::Source(policies)) {
      if (std::optional<std::string> od = DerivedOutlierDetection::Entry(source->breaker,
                                                                         entries.front())) {
        config.derived_outlier_detection_ = *od;
        entries.front() = std::move(*od);
      }
    }
  }
  if (!lb.configs.empty() || !config.derived_outlier_detection_.empty()) {
    members.push_back(
        absl::StrCat("\"loadBalancingConfig\": [", absl::StrJoin(entries, ", "), "]"));
  } else if (!lb.policy.empty()) {
    members.push_back(
        absl::StrCat("\"loadBalancingPolicy\": ", internal::QuoteJson(lb.policy)));
  }
  if (lb.health_check_service.has_value()) {
    members.push_back(absl::StrCat("\"healthCheckConfig\": {\"serviceName\": ",
                                   internal::QuoteJson(*lb.health_check_service), "}"));
  }
  config.load_balancing_ = !lb.configs.empty() || !lb.policy.empty() ||
                           lb.health_check_service.has_value();
  if (!members.empty()) {
    config.service_config_ = absl::StrCat("{", absl::StrJoin(members, ", "), "}");
  }
  return config;
}

}  // namespace resilience
