// File: src/policy/channel_service_config.h
//
// The whole service config (GRPC_ARG_SERVICE_CONFIG) a channel built for a
// policy set carries: what gRPC's own retry needs (BuiltInRetryConfig:
// streams' retryPolicy, waitForReady, retryThrottling) and the file's
// load-balancing and health settings with gRPC's meaning
// (LoadBalancingSettings), as the file writes them:
//
//   file                                     the channel's service config
//   "loadBalancingConfig": [A, B]            the same
//   "loadBalancingPolicy": P                 the same
//   "healthCheckConfig": {"serviceName": S}  the same
//
// No outlier detection is added (one was derived from a breaker until issue
// 40: gRPC 1.51's counts every status but OK, NOT_FOUND included, as the
// replica's failure, and ejected healthy replicas for their application
// answers; docs/replicas.md).
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

 private:
  explicit ChannelServiceConfig(BuiltInRetryConfig retries) : retries_(std::move(retries)) {}

  BuiltInRetryConfig retries_;
  std::string service_config_;
  bool load_balancing_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_CHANNEL_SERVICE_CONFIG_H_
