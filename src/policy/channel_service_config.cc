#include "src/policy/channel_service_config.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/policy/json_text.h"

namespace resilience {

ChannelServiceConfig ChannelServiceConfig::Build(const PolicyTable& policies,
                                                 const MethodCatalog& catalog) {
  ChannelServiceConfig config(BuiltInRetryConfig::Build(policies, catalog));
  std::vector<std::string> members;
  if (!config.retries_.members().empty()) members.push_back(config.retries_.members());

  // The file's load balancing goes as written: no outlier detection is
  // added. gRPC 1.51's counts every status but OK as a failure of the
  // replica (NOT_FOUND included), so one derived from a breaker, which counts
  // only the server's failures, ejected healthy replicas for their
  // application answers and left one replica of three serving
  // (docs/replicas.md, "No outlier detection by default").
  const LoadBalancingSettings& lb = policies.load_balancing();
  if (!lb.configs.empty()) {
    members.push_back(
        absl::StrCat("\"loadBalancingConfig\": [", absl::StrJoin(lb.configs, ", "), "]"));
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
