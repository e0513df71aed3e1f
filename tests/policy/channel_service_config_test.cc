// The channel's whole service config: the file's load balancing and health
// with gRPC's meaning, the outlier detection derived from a breaker when a
// round_robin file sets none, and the built-in retry's part beside them.

#include "src/policy/channel_service_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/derived_outlier_detection.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ConfigOf(const std::string& json) {
  return ChannelServiceConfig::Build(MustParse(json), TestMethods()).service_config();
}

// The breaker's defaults (failureRateThreshold 0.5, minRequests 20, window
// 10s in 10 buckets, openDuration 5s, maxOpenDuration 60s) become gRPC's
// failure-percentage ejection.
TEST(ChannelServiceConfigTest, RoundRobinGetsOutlierDetectionFromTheThreeStateBreaker) {
  const std::string config = ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": ""},
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}]})");
  EXPECT_EQ(config,
            "{\"loadBalancingConfig\": [{\"outlier_detection_experimental\": {\"interval\": "
            "\"1s\", \"baseEjectionTime\": \"5s\", \"maxEjectionTime\": \"60s\", "
            "\"maxEjectionPercent\": 50, \"failurePercentageEjection\": {\"threshold\": 49, "
            "\"enforcementPercentage\": 100, \"minimumHosts\": 2, \"requestVolume\": 2}, "
            "\"childPolicy\": [{\"round_robin\": {}}]}}], "
            "\"healthCheckConfig\": {\"serviceName\": \"\"}}");
}

// Without health checking nothing is derived: ejection without health made
// a rolling restart fail calls (docs/replicas.md).
TEST(ChannelServiceConfigTest, NoOutlierDetectionWithoutHealthChecking) {
  EXPECT_EQ(ConfigOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}]})"),
            "{\"loadBalancingConfig\": [{\"round_robin\": {}}]}");
  EXPECT_EQ(ConfigOf(R"({"loadBalancingPolicy": "round_robin",
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {}}}]})"),
            "{\"loadBalancingPolicy\": \"round_robin\"}");
}

TEST(ChannelServiceConfigTest, TheBreakersSettingsMoveTheEjection) {
  const std::string config = ConfigOf(R"({"loadBalancingPolicy": "round_robin",
      "healthCheckConfig": {"serviceName": ""},
      "methodConfig": [{"name": [{}], "breaker": {"threeState": {
        "failureRateThreshold": 0.25, "minRequests": 50, "window": "4s", "buckets": 8,
        "openDuration": "2s", "maxOpenDuration": "30s"}}}]})");
  EXPECT_THAT(config, HasSubstr("\"interval\": \"0.5s\", \"baseEjectionTime\": \"2s\", "
                                "\"maxEjectionTime\": \"30s\""));
  // ceil(50 x 0.5s / 4s) = 7 calls in an interval; gRPC ejects above 24%.
  EXPECT_THAT(config, HasSubstr("{\"threshold\": 24, \"enforcementPercentage\": 100, "
                                "\"minimumHosts\": 2, \"requestVolume\": 7}"));
  EXPECT_THAT(config, HasSubstr("\"childPolicy\": [{\"round_robin\": {}}]"));
  EXPECT_THAT(config, Not(HasSubstr("loadBalancingPolicy")));
}

// SRE: k 2 drops once failures pass half the calls; its window is the
// ejection time, its 40 buckets the interval.
TEST(ChannelServiceConfigTest, SreBreakerMapsToo) {
  PolicyTable table = MustParse(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": ""},
      "methodConfig": [{"name": [{}], "breaker": {"sre": {"k": 2}}}]})");
  const std::string config = ChannelServiceConfig::Build(table, TestMethods()).service_config();
  EXPECT_THAT(config, HasSubstr("\"interval\": \"0.25s\", \"baseEjectionTime\": \"10s\", "
                                "\"maxEjectionTime\": \"300s\""));
  EXPECT_THAT(config, HasSubstr("{\"threshold\": 49, \"enforcementPercentage\": 100, "
                                "\"minimumHosts\": 2, \"requestVolume\": 2}"));
}

// The default entry's breaker, else the first with one in file order.
TEST(ChannelServiceConfigTest, TheDefaultEntrysBreakerIsTheSource) {
  PolicyTable table = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.S"}], "breaker": {"threeState": {"openDuration": "7s"}}},
      {"name": [{"service": "b.T"}], "breaker": {"threeState": {"openDuration": "8s"}}},
      {"name": [{}], "breaker": {"threeState": {"openDuration": "9s"}}}]})");
  ASSERT_NE(DerivedOutlierDetection::Source(table), nullptr);
  EXPECT_EQ(DerivedOutlierDetection::Source(table)->breaker.three_state.open_duration,
            absl::Seconds(9));
  PolicyTable no_default = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.S"}], "timeout": "1s"},
      {"name": [{"service": "b.T"}], "breaker": {"threeState": {"openDuration": "8s"}}}]})");
  EXPECT_EQ(DerivedOutlierDetection::Source(no_default)->breaker.three_state.open_duration,
            absl::Seconds(8));
  EXPECT_EQ(DerivedOutlierDetection::Source(MustParse(R"({"methodConfig": [
      {"name": [{}], "timeout": "1s"}]})")),
            nullptr);
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
  EXPECT_EQ(none.derived_outlier_detection(), "");
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
