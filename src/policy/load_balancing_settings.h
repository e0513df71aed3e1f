// File: src/policy/load_balancing_settings.h
//
// What a policy file says about how a channel spreads its calls over the
// addresses of its target: gRPC's own service-config fields
// loadBalancingPolicy, loadBalancingConfig and healthCheckConfig, checked
// by LoadBalancingChecker (src/policy/load_balancing_checker.h) and put into
// the channel's service config by ChannelServiceConfig
// (src/policy/channel_service_config.h) with gRPC's meaning.

#ifndef GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_SETTINGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace resilience {

// What resilience_p2c's entry says (LoadBalancingSettings::routing). Outside
// LoadBalancingSettings: a nested struct with default member initializers is
// not default-constructible inside its enclosing class for clang.
struct RoutingSettings {
  // How long an endpoint that joined or came back takes to get its full
  // share ("slowStart").
  absl::Duration slow_start = absl::Seconds(10);
  // How often a dns: target is resolved again ("reresolveInterval").
  absl::Duration reresolve_interval = absl::Seconds(30);
};

struct LoadBalancingSettings {
  // The library's own endpoint picker: loadBalancingConfig's first entry
  // {"resilience_p2c": {...}}, which is taken out of `configs` (gRPC never
  // sees it). The channel then picks the endpoint of every unary attempt
  // of a generated stub itself (docs/routing.md).
  using Routing = RoutingSettings;
  std::optional<Routing> routing;
  // loadBalancingConfig, one JSON object per entry as the file wrote it
  // (keys sorted, numbers in their shortest form), in file order; gRPC uses
  // the first (every name in it is one gRPC 1.51 registers). Empty: none.
  // With `routing` and no entry of gRPC's, {"round_robin": {}}: the
  // channel's streams and the calls the picker does not take are spread
  // over the replicas too.
  std::vector<std::string> configs;
  // loadBalancingPolicy, lower-cased as gRPC reads it; empty: none. gRPC
  // uses it only without loadBalancingConfig.
  std::string policy;
  // The policy gRPC runs for the channel: the first entry's name, else
  // `policy`, else "" (gRPC's default, pick_first).
  std::string root;
  // The policy under an outlier_detection_experimental root (its
  // childPolicy's first name), else `root`: the one that picks addresses.
  std::string picker;
  // Whether the file asks for outlier_detection_experimental anywhere in
  // the used entry (the library adds none: docs/replicas.md).
  bool outlier_detection = false;
  // healthCheckConfig.serviceName ("" checks the server as a whole); none
  // without healthCheckConfig.
  std::optional<std::string> health_check_service;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_LOAD_BALANCING_SETTINGS_H_
