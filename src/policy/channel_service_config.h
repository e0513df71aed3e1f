// File: src/policy/channel_service_config.h
//
// The whole service config (GRPC_ARG_SERVICE_CONFIG) a channel built for a
// policy set carries: what gRPC's own retry needs (BuiltInRetryConfig:
// streams' retryPolicy, waitForReady, retryThrottling) and the file's
// load-balancing and health settings with gRPC's meaning
// (LoadBalancingSettings), where a round_robin with health checking and
// without outlier detection gets one derived from a breaker of the file
// (DerivedOutlierDetection).
//
//   file                                   the channel's service config
//   "loadBalancingConfig": [A, B]          "loadBalancingConfig": [A', B]
//   "loadBalancingPolicy": "round_robin"   "loadBalancingConfig": [OD(round_robin)]
//                                          (with healthCheckConfig; else the same)
//   "loadBalancingPolicy": P (other)       "loadBalancingPolicy": P
//   "healthCheckConfig": {"serviceName": S}  the same
// where A' is A, or OD(A) when A is round_robin, the file asks for no
// outlier detection, sets healthCheckConfig and has a breaker.
//
// Example:
//   ChannelServiceConfig config = ChannelServiceConfig::Build(table, MethodCatalog::Linked());
//   if (!config.service_config().empty()) args.SetServiceConfigJSON(config.service_config());

#ifndef GRPC_RESILIENCE_SRC_POLICY_CHANNEL_SERVICE_CONFIG_H_
#define GRPC_RESILIENCE_SRC_POLICY_CHANNEL_SERVICE_CONFIG_H_

#include <string>

#include "src/policy/builtin_retry_config.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {

// ChannelServiceConfig
//
// Immutable; built once per channel.
class ChannelServiceConfig {
 public:
  static ChannelServiceConfig Build(const PolicyTable& policies, const MethodCatalog& catalog);

  // The JSON; empty when gRPC needs none.
  const std::string& service_config() const { return service_config_; }
  // Its retry part alone (retried streams, the warnings of their retry).
  const BuiltInRetryConfig& retries() const { return retries_; }
  // Whether it carries settings of the file's load balancing or health.
  bool load_balancing() const { return load_balancing_; }
  // The outlier_detection_experimental entry the library added; empty when
  // none.
  const std::string& derived_outlier_detection() const { return derived_outlier_detection_; }

 private:
  explicit ChannelServiceConfig(BuiltInRetryConfig retries) : retries_(std::move(retries)) {}

  BuiltInRetryConfig retries_;
  std::string service_config_;
  bool load_balancing_ = false;
  std::string derived_outlier_detection_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_CHANNEL_SERVICE_CONFIG_H_
