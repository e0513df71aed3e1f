// The channel's whole service config: the file's load balancing and health
// with gRPC's meaning, as written, and the built-in retry's part beside them.

#include "src/policy/channel_service_config.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

std::string ConfigOf(const std::string& json) {
  return ChannelServiceConfig::Build(MustParse(json), TestMethods()).service_config();
}

// round_robin with health checking and a breaker (the README's replica
// file) goes as written: no outlier detection is derived from the breaker.
// gRPC 1.51's outlier detection counts every status but OK as the replica's
// failure, NOT_FOUND included: derived from the breaker, it ejected two of
// three replicas of a cache for their misses and left one serving (issue 40:
// 20,739 and 329 Gets on the two healthy ones; docs/replicas.md).
TEST(ChannelServiceConfigTest, NoOutlierDetectionIsDerivedFromTheBreaker) {
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": ""},
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}]})"),
            "{\"loadBalancingConfig\": [{\"round_robin\": {}}], "
            "\"healthCheckConfig\": {\"serviceName\": \"\"}}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingPolicy": "round_robin",
      "healthCheckConfig": {"serviceName": "cache.v1.CacheService"},
      "methodConfig": [{"name": [{}], "breaker": {"sre": {"k": 2}}}]})"),
            "{\"loadBalancingPolicy\": \"round_robin\", "
            "\"healthCheckConfig\": {\"serviceName\": \"cache.v1.CacheService\"}}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}]})"),
            "{\"loadBalancingConfig\": [{\"round_robin\": {}}]}");
}

// What the file says is kept as it is: its own outlier detection, a
// round_robin without any breaker, pick_first, nothing at all.
TEST(ChannelServiceConfigTest, OtherwiseTheFilesSettingsGoUnchanged) {
  const std::string breaker = R"("methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}])";
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"outlier_detection_experimental": {
                         "childPolicy": [{"round_robin": {}}]}}], )" + breaker + "}"),
            "{\"loadBalancingConfig\": [{\"outlier_detection_experimental\": {\"childPolicy\": "
            "[{\"round_robin\": {}}]}}]}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}]})"),
            "{\"loadBalancingConfig\": [{\"round_robin\": {}}]}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"pick_first": {}}], )" + breaker + "}"),
            "{\"loadBalancingConfig\": [{\"pick_first\": {}}]}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingPolicy": "pick_first", )" + breaker + "}"),
            "{\"loadBalancingPolicy\": \"pick_first\"}");
  EXPECT_EQ(ConfigOf("{" + breaker + "}"), "");
  ChannelServiceConfig none = ChannelServiceConfig::Build(MustParse("{" + breaker + "}"),
                                                          TestMethods());
  EXPECT_FALSE(none.load_balancing());
}

TEST(ChannelServiceConfigTest, HealthAndRetriesGoBesideTheLoadBalancing) {
  const std::string config = ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": "cache.v1.CacheService"},
      "methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], "waitForReady": true}]})");
  EXPECT_EQ(config,
            "{\"methodConfig\": [{\"name\": [{\"service\": \"cache.v1.CacheService\"}], "
            "\"waitForReady\": true}], \"loadBalancingConfig\": [{\"round_robin\": {}}], "
            "\"healthCheckConfig\": {\"serviceName\": \"cache.v1.CacheService\"}}");
}

}  // namespace
}  // namespace resilience
