// loadBalancingPolicy, loadBalancingConfig and healthCheckConfig keep gRPC's
// meaning: checked against what gRPC 1.51 accepts (LoadBalancingChecker),
// errors naming the JSON path and the value.

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(LoadBalancingPolicyTest, RoundRobinAndHealthLoadWithoutWarnings) {
  PolicyTable set = MustParse(R"({"loadBalancingConfig": [{"round_robin": {}}],
                                  "healthCheckConfig": {"serviceName": "cache.v1.CacheService"}})");
  EXPECT_THAT(set.warnings(), IsEmpty());
  const LoadBalancingSettings& lb = set.load_balancing();
  EXPECT_THAT(lb.configs, ElementsAre("{\"round_robin\": {}}"));
  EXPECT_EQ(lb.root, "round_robin");
  EXPECT_EQ(lb.picker, "round_robin");
  EXPECT_FALSE(lb.outlier_detection);
  EXPECT_EQ(lb.health_check_service, "cache.v1.CacheService");
}

// Issue 40 item 1: any string is a valid health service name, but one that
// no server knows fails every call of the channel (gRPC 1.51 takes
// SERVICE_UNKNOWN as NOT_SERVING): a name that is neither "", a service the
// file names nor a linked one is a warning with the nearest name, and
// strict mode refuses it.
TEST(LoadBalancingPolicyTest, AHealthServiceNameNoServiceHasIsAWarning) {
  const std::string typo = R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": "cache.v1.CacheServce"},
      "methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], "timeout": "1s"}]})";
  const std::string warning =
      "healthCheckConfig.serviceName: \"cache.v1.CacheServce\" is not a service this file "
      "names or this process links, nor \"\" (the whole server) (did you mean "
      "\"cache.v1.CacheService\"?): a server whose health service does not know the name "
      "answers SERVICE_UNKNOWN, which gRPC 1.51 takes as NOT_SERVING, and every call of the "
      "channel fails UNAVAILABLE (\"backend unhealthy\")";
  EXPECT_THAT(WarningsOf(typo), ElementsAre(warning));
  PolicyTable::LoadOptions strict;
  strict.strict = true;
  const absl::StatusOr<PolicyTable> refused = Load(typo, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "strict mode: 1 warning(s): " + warning);
  // A service the file names (not linked: that is its own warning), a
  // linked one, and "" are fine; a name far from every one has no "did you
  // mean".
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": "z.Named"},
      "methodConfig": [{"name": [{"service": "z.Named"}], "timeout": "1s"}]})"),
              ElementsAre(::testing::StartsWith(
                  "methodConfig[0].name[0]: service \"z.Named\" is not linked")));
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": "demo.Echo"}})"),
              IsEmpty());
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": ""}})"),
              IsEmpty());
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
      "healthCheckConfig": {"serviceName": "readiness-of-everything"}})"),
              ElementsAre(::testing::StartsWith(
                  "healthCheckConfig.serviceName: \"readiness-of-everything\" is not a service "
                  "this file names or this process links, nor \"\" (the whole server): a server")));
}

TEST(LoadBalancingPolicyTest, NoSettingsMeanGrpcsDefault) {
  PolicyTable set = MustParse(R"({"methodConfig": [{"name": [{}], "timeout": "1s"}]})");
  EXPECT_THAT(set.load_balancing().configs, IsEmpty());
  EXPECT_EQ(set.load_balancing().root, "");
  EXPECT_FALSE(set.load_balancing().health_check_service.has_value());
}

// Every field of gRFC A50, written back canonically (keys sorted, numbers
// shortest) for the channel's service config.
TEST(LoadBalancingPolicyTest, OutlierDetectionWithEveryFieldLoads) {
  PolicyTable set = MustParse(R"({"loadBalancingConfig": [{"outlier_detection_experimental": {
      "interval": "0.5s", "baseEjectionTime": "10s", "maxEjectionTime": "30.000000001s",
      "maxEjectionPercent": 50,
      "successRateEjection": {"stdevFactor": 1900, "enforcementPercentage": 100,
                              "minimumHosts": 5, "requestVolume": 100},
      "failurePercentageEjection": {"threshold": 50, "enforcementPercentage": 100,
                                    "minimumHosts": 2, "requestVolume": 5},
      "childPolicy": [{"round_robin": {}}]}}]})");
  EXPECT_THAT(set.warnings(), IsEmpty());
  const LoadBalancingSettings& lb = set.load_balancing();
  EXPECT_EQ(lb.root, "outlier_detection_experimental");
  EXPECT_EQ(lb.picker, "round_robin");
  EXPECT_TRUE(lb.outlier_detection);
  EXPECT_THAT(
      lb.configs,
      ElementsAre(
          "{\"outlier_detection_experimental\": {\"baseEjectionTime\": \"10s\", \"childPolicy\": "
          "[{\"round_robin\": {}}], \"failurePercentageEjection\": {\"enforcementPercentage\": "
          "100, \"minimumHosts\": 2, \"requestVolume\": 5, \"threshold\": 50}, \"interval\": "
          "\"0.5s\", \"maxEjectionPercent\": 50, \"maxEjectionTime\": \"30.000000001s\", "
          "\"successRateEjection\": {\"enforcementPercentage\": 100, \"minimumHosts\": 5, "
          "\"requestVolume\": 100, \"stdevFactor\": 1900}}}"));
}

TEST(LoadBalancingPolicyTest, PolicyNameIsReadAsGrpcDoesCaseInsensitively) {
  PolicyTable set = MustParse(R"({"loadBalancingPolicy": "ROUND_ROBIN"})");
  EXPECT_THAT(set.warnings(), IsEmpty());
  EXPECT_EQ(set.load_balancing().policy, "round_robin");
  EXPECT_EQ(set.load_balancing().root, "round_robin");
  EXPECT_EQ(MustParse(R"({"loadBalancingConfig": [{"grpclb": {"childPolicy": [{"round_robin": {}}],
                          "serviceName": "s"}}]})")
                .load_balancing()
                .root,
            "grpclb");
}

TEST(LoadBalancingPolicyTest, BadNamesAndFieldsAreErrorsNamingPathAndValue) {
  const std::string od = R"({"loadBalancingConfig": [{"outlier_detection_experimental": {)";
  const std::string rr = R"("childPolicy": [{"round_robin": {}}]}}]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"loadBalancingConfig": [{"least_request_experimental": {}}]})",
       "loadBalancingConfig[0].least_request_experimental: not a load-balancing policy gRPC "
       "1.51 registers (pick_first, round_robin, outlier_detection_experimental, grpclb)"},
      {od + R"("interval": "5", )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.interval: \"5\" is not a "
       "duration (gRPC wants seconds and an \"s\", e.g. \"0.5s\")"},
      {od + R"("interval": 5, )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.interval: 5 is not a "
       "duration (gRPC wants seconds and an \"s\", e.g. \"0.5s\")"},
      {od + R"("baseEjectionTime": "-1s", )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.baseEjectionTime: \"-1s\" is "
       "not a duration (gRPC wants seconds and an \"s\", e.g. \"0.5s\")"},
      {od + R"("interval": "0s", )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.interval: must be in (0s, "
       "3600s], got \"0s\""},
      {od + R"("maxEjectionPercent": 150, )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.maxEjectionPercent: must be an "
       "integer in [0, 100], got 150"},
      {od + R"("failurePercentageEjection": {"threshold": 50.5}, )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.failurePercentageEjection."
       "threshold: must be an integer in [0, 100], got 50.5"},
      {od + R"("successRateEjection": {"threshold": 50}, )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.successRateEjection.threshold: "
       "not a field of successRateEjection (stdevFactor, enforcementPercentage, minimumHosts, "
       "requestVolume)"},
      {od + R"("baseEjectiontime": "1s", )" + rr,
       "loadBalancingConfig[0].outlier_detection_experimental.baseEjectiontime: not a field of "
       "outlier_detection_experimental (interval, baseEjectionTime, maxEjectionTime, "
       "maxEjectionPercent, successRateEjection, failurePercentageEjection, childPolicy)"},
      {od + R"("interval": "1s"}}]})",
       "loadBalancingConfig[0].outlier_detection_experimental.childPolicy: required (gRFC "
       "A50), e.g. [{\"round_robin\": {}}]"},
      {od + R"("childPolicy": [{"round_robbin": {}}]}}]})",
       "loadBalancingConfig[0].outlier_detection_experimental.childPolicy[0].round_robbin: not "
       "a load-balancing policy gRPC 1.51 registers (pick_first, round_robin, "
       "outlier_detection_experimental, grpclb)"},
      {od + R"("childPolicy": []}}]})",
       "loadBalancingConfig[0].outlier_detection_experimental.childPolicy: must name at least "
       "one policy, got []"},
      {R"({"loadBalancingConfig": [{"round_robin": {"x": 1}}]})",
       "loadBalancingConfig[0].round_robin.x: not a field of round_robin (it has none)"},
      {R"({"loadBalancingConfig": [{"round_robin": {}, "pick_first": {}}]})",
       "loadBalancingConfig[0]: must be an object with one field, the policy's name, got an "
       "object with 2 fields"},
      {R"({"loadBalancingConfig": [{"priority_experimental": {}}]})",
       "loadBalancingConfig[0].priority_experimental: registered by gRPC 1.51 for xDS, which "
       "names its children and sets the request hash they need; not for a policy file"},
      {R"({"loadBalancingConfig": [{"grpclb": {"childPolicy": [{"grpclb": {}}]}}]})",
       "loadBalancingConfig[0].grpclb.childPolicy[0].grpclb: not allowed here (pick_first, "
       "round_robin)"},
      {R"({"loadBalancingConfig": [{"grpclb": {"serviceName": 1}}]})",
       "loadBalancingConfig[0].grpclb.serviceName: must be a string, got 1"},
      {R"({"loadBalancingPolicy": "outlier_detection_experimental"})",
       "loadBalancingPolicy: must be one of pick_first, round_robin (gRPC 1.51 takes "
       "here only policies that need no config; others go in loadBalancingConfig), got "
       "\"outlier_detection_experimental\""},
      {R"({"healthCheckConfig": {"serviceName": 5}})",
       "healthCheckConfig.serviceName: must be a string, got 5"},
      {R"({"healthCheckConfig": {"service": "a"}})",
       "healthCheckConfig.service: not a field of healthCheckConfig (serviceName)"},
  };
  for (const auto& [json, error] : cases) EXPECT_EQ(ErrorOf(json), error) << json;
}

// Both policies with a childPolicy read it one way: a list, or the path
// and the value that is not.
TEST(LoadBalancingPolicyTest, AChildPolicyThatIsNoListIsAnErrorNamingPathAndValue) {
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"grpclb": {"childPolicy": "round_robin"}}]})"),
            "loadBalancingConfig[0].grpclb.childPolicy: must be an array, got \"round_robin\"");
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [
                       {"outlier_detection_experimental": {"childPolicy": {}}}]})"),
            "loadBalancingConfig[0].outlier_detection_experimental.childPolicy: must be an "
            "array, got an object");
}

TEST(LoadBalancingPolicyTest, SettingsWithoutEffectAreWarnings) {
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}, {"pick_first": {}}]})"),
              ElementsAre("loadBalancingConfig[1]: never used: gRPC takes the first policy of "
                          "the list it knows (loadBalancingConfig[0], round_robin)"));
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"round_robin": {}}],
                             "loadBalancingPolicy": "pick_first"})"),
              ElementsAre("loadBalancingPolicy: not used: gRPC uses loadBalancingConfig when "
                          "both are given"));
  EXPECT_THAT(WarningsOf(R"({"healthCheckConfig": {"serviceName": ""}})"),
              ElementsAre("healthCheckConfig: no effect under pick_first (gRPC's default, as no "
                          "loadBalancingConfig is given): gRPC 1.51 checks health under "
                          "round_robin; add \"loadBalancingConfig\": [{\"round_robin\": {}}]"));
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"outlier_detection_experimental": {
                             "childPolicy": [{"round_robin": {}}]}}],
                             "healthCheckConfig": {}})"),
              IsEmpty());
}

// The library's own picker is loadBalancingConfig's first entry: taken
// out of what gRPC gets, its fields read, the entries after it gRPC's as
// before; alone, it leaves the channel's other calls to round_robin.
TEST(LoadBalancingPolicyTest, TheLibrarysPickerIsTakenOutOfWhatGrpcGets) {
  PolicyTable set = MustParse(R"({"loadBalancingConfig": [
      {"resilience_p2c": {"slowStart": "2.5s", "reresolveInterval": "60s"}},
      {"round_robin": {}}],
      "healthCheckConfig": {"serviceName": ""}})");
  EXPECT_THAT(set.warnings(), IsEmpty());
  const LoadBalancingSettings& lb = set.load_balancing();
  ASSERT_TRUE(lb.routing.has_value());
  EXPECT_EQ(lb.routing->slow_start, absl::Milliseconds(2500));
  EXPECT_EQ(lb.routing->reresolve_interval, absl::Seconds(60));
  EXPECT_THAT(lb.configs, ElementsAre("{\"round_robin\": {}}"));
  EXPECT_EQ(lb.root, "round_robin");

  PolicyTable alone = MustParse(R"({"loadBalancingConfig": [{"resilience_p2c": {}}]})");
  EXPECT_THAT(alone.warnings(), IsEmpty());
  ASSERT_TRUE(alone.load_balancing().routing.has_value());
  EXPECT_EQ(alone.load_balancing().routing->slow_start, absl::Seconds(10));
  EXPECT_EQ(alone.load_balancing().routing->reresolve_interval, absl::Seconds(30));
  EXPECT_THAT(alone.load_balancing().configs, ElementsAre("{\"round_robin\": {}}"));
  EXPECT_EQ(alone.load_balancing().root, "round_robin");

  EXPECT_FALSE(MustParse(R"({"loadBalancingConfig": [{"round_robin": {}}]})")
                   .load_balancing()
                   .routing.has_value());
}

TEST(LoadBalancingPolicyTest, TheLibrarysPickerErrorsNamePathAndValue) {
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"round_robin": {}}, {"resilience_p2c": {}}]})"),
            "loadBalancingConfig[1].resilience_p2c: must be the first entry: the library's picker "
            "takes the unary calls, the entries after it name gRPC's policy for the rest");
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"resilience_p2c": {"slowstart": "1s"}}]})"),
            "loadBalancingConfig[0].resilience_p2c.slowstart: not a field of resilience_p2c "
            "(slowStart, reresolveInterval)");
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"resilience_p2c": {"slowStart": "1m"}}]})"),
            "loadBalancingConfig[0].resilience_p2c.slowStart: \"1m\" is not a duration (gRPC "
            "wants seconds and an \"s\", e.g. \"0.5s\")");
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"resilience_p2c": {"slowStart": "601s"}}]})"),
            "loadBalancingConfig[0].resilience_p2c.slowStart: must be in (0s, 600s], got "
            "\"601s\"");
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"resilience_p2c": []}]})"),
            "loadBalancingConfig[0].resilience_p2c: must be an object, got an array");
  // The entries after it are checked as before, with their own index.
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"resilience_p2c": {}}, {"round_robn": {}}]})"),
            "loadBalancingConfig[1].round_robn: not a load-balancing policy gRPC 1.51 registers "
            "(pick_first, round_robin, outlier_detection_experimental, grpclb)");
  EXPECT_THAT(WarningsOf(R"({"loadBalancingConfig": [{"resilience_p2c": {}},
                                                      {"round_robin": {}}, {"pick_first": {}}]})"),
              ElementsAre("loadBalancingConfig[2]: never used: gRPC takes the first policy of "
                          "the list it knows (loadBalancingConfig[1], round_robin)"));
}

}  // namespace
}  // namespace resilience
