// throttle.adaptive in the policy file: the defaults, each algorithm's
// fields, the errors (with the JSON path and the value), the warnings for
// fields the chosen algorithm does not read, and the limiter built from it.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const MethodCatalog& Methods() {
  static const MethodCatalog* methods = new MethodCatalog(std::vector<MethodCatalog::Method>{{"s.S", "M"}});
  return *methods;
}

absl::StatusOr<PolicyTable> Load(const std::string& throttle) {
  PolicyTable::LoadOptions options;
  options.methods = &Methods();
  return PolicyTable::FromJsonString(
      absl::StrCat(R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}], "throttle": )",
                   throttle, "}]}"),
      options);
}

const ThrottleSettings& ThrottleOf(const PolicyTable& set) {
  return *set.Find("/s.S/M").policy->throttle;
}

TEST(AdaptiveThrottlePolicyTest, AnEmptyObjectIsAGradientLimitWithTheDocumentedDefaults) {
  absl::StatusOr<PolicyTable> set = Load(R"({"adaptive": {}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->warnings().empty());
  const ThrottleSettings& t = ThrottleOf(*set);
  EXPECT_EQ(t.max_concurrency, 0);
  ASSERT_TRUE(t.adaptive.has_value());
  EXPECT_EQ(t.adaptive->algorithm, AdaptiveLimitSettings::Algorithm::kGradient);
  const GradientConcurrencyLimiter::Options& g = t.adaptive->gradient;
  EXPECT_EQ(g.min_limit, 3);
  EXPECT_EQ(g.max_limit, 1000);
  EXPECT_EQ(g.initial_limit, 20);
  EXPECT_EQ(g.sample_window, absl::Milliseconds(50));
  EXPECT_EQ(g.min_samples, 10);
  EXPECT_EQ(g.baseline_interval, absl::Seconds(10));
  EXPECT_EQ(g.baseline_samples, 20);
  EXPECT_DOUBLE_EQ(g.tolerance, 0.25);
  EXPECT_DOUBLE_EQ(g.smoothing, 0.7);
  // The runtime builds it: a gradient limiter, measuring at minLimit first.
  SimulatedClock clock;
  std::unique_ptr<ConcurrencyLimiter> limiter = CreateConcurrencyLimiter(t, clock);
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(limiter->limit(), 3);
  ASSERT_NE(dynamic_cast<GradientConcurrencyLimiter*>(limiter.get()), nullptr);
}

TEST(AdaptiveThrottlePolicyTest, EveryFieldLandsWhereItBelongs) {
  absl::StatusOr<PolicyTable> set = Load(
      R"({"ratePerSecond": 50, "adaptive": {"algorithm": "GRADIENT", "minLimit": 2, "maxLimit": 64,
          "initialLimit": 8, "sampleWindow": "0.25s", "minSamples": 4, "baselineInterval": "30s",
          "baselineSamples": 7, "tolerance": 0.5, "smoothing": 0.2}})");
  ASSERT_TRUE(set.ok()) << set.status();
  const ThrottleSettings& t = ThrottleOf(*set);
  EXPECT_EQ(t.rate_per_second, 50);  // combines with a rate limit
  const GradientConcurrencyLimiter::Options& g = t.adaptive->gradient;
  EXPECT_EQ(g.min_limit, 2);
  EXPECT_EQ(g.max_limit, 64);
  EXPECT_EQ(g.initial_limit, 8);
  EXPECT_EQ(g.sample_window, absl::Milliseconds(250));
  EXPECT_EQ(g.min_samples, 4);
  EXPECT_EQ(g.baseline_interval, absl::Seconds(30));
  EXPECT_EQ(g.baseline_samples, 7);
  EXPECT_DOUBLE_EQ(g.tolerance, 0.5);
  EXPECT_DOUBLE_EQ(g.smoothing, 0.2);

  set = Load(R"({"adaptive": {"algorithm": "AIMD", "minLimit": 1, "backoffRatio": 0.5,
                              "timeout": "0.3s"}})");
  ASSERT_TRUE(set.ok()) << set.status();
  const AdaptiveLimitSettings& a = *ThrottleOf(*set).adaptive;
  EXPECT_EQ(a.algorithm, AdaptiveLimitSettings::Algorithm::kAimd);
  EXPECT_EQ(a.aimd.min_limit, 1);
  EXPECT_DOUBLE_EQ(a.aimd.backoff_ratio, 0.5);
  EXPECT_EQ(a.aimd.timeout, absl::Milliseconds(300));
  SimulatedClock clock;
  std::unique_ptr<ConcurrencyLimiter> limiter = CreateConcurrencyLimiter(ThrottleOf(*set), clock);
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(limiter->limit(), 20);
}

// A maxLimit under the default initial limit pulls the initial limit down
// instead of refusing a file that never set it.
TEST(AdaptiveThrottlePolicyTest, InitialLimitDefaultsIntoTheBounds) {
  absl::StatusOr<PolicyTable> set = Load(R"({"adaptive": {"maxLimit": 8}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(ThrottleOf(*set).adaptive->gradient.initial_limit, 8);
  set = Load(R"({"adaptive": {"minLimit": 50}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(ThrottleOf(*set).adaptive->gradient.initial_limit, 50);
}

TEST(AdaptiveThrottlePolicyTest, ErrorsNameThePathAndTheValue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"maxConcurrency": 5, "adaptive": {}})",
       "methodConfig[0].throttle.adaptive: cannot be set together with "
       "methodConfig[0].throttle.maxConcurrency (a fixed limit); cap the adaptive limit with "
       "methodConfig[0].throttle.adaptive.maxLimit"},
      {R"({"adaptive": {"algorithm": "VEGAS"}})",
       "methodConfig[0].throttle.adaptive.algorithm: must be \"GRADIENT\" or \"AIMD\", got "
       "\"VEGAS\""},
      {R"({"adaptive": {"minLimit": 0}})",
       "methodConfig[0].throttle.adaptive.minLimit: must be in [1, 1000000], got 0"},
      {R"({"adaptive": {"minLimit": 10, "maxLimit": 5}})",
       "methodConfig[0].throttle.adaptive.maxLimit: must be in [minLimit (10), 1000000], got 5"},
      {R"({"adaptive": {"initialLimit": 2000}})",
       "methodConfig[0].throttle.adaptive.initialLimit: must be in [minLimit (3), maxLimit "
       "(1000)], got 2000"},
      {R"({"adaptive": {"sampleWindow": "0s"}})",
       "methodConfig[0].throttle.adaptive.sampleWindow: must be in [1ms, 1h], got 0"},
      {R"({"adaptive": {"minSamples": 0}})",
       "methodConfig[0].throttle.adaptive.minSamples: must be in [1, 1000000], got 0"},
      {R"({"adaptive": {"baselineInterval": "0.02s"}})",
       "methodConfig[0].throttle.adaptive.baselineInterval: must be in [sampleWindow (50ms), "
       "1h], got 20ms"},
      {R"({"adaptive": {"baselineInterval": "7200s"}})",
       "methodConfig[0].throttle.adaptive.baselineInterval: must be in (0, 1h], got 2h"},
      {R"({"adaptive": {"baselineSamples": -1}})",
       "methodConfig[0].throttle.adaptive.baselineSamples: must be in [1, 1000000], got -1"},
      {R"({"adaptive": {"tolerance": 11}})",
       "methodConfig[0].throttle.adaptive.tolerance: must be in [0, 10], got 11"},
      {R"({"adaptive": {"smoothing": 0}})",
       "methodConfig[0].throttle.adaptive.smoothing: must be in (0, 1], got 0"},
      {R"({"adaptive": {"algorithm": "AIMD", "backoffRatio": 1}})",
       "methodConfig[0].throttle.adaptive.backoffRatio: must be in [0.1, 1), got 1"},
      {R"({"adaptive": {"algorithm": "AIMD", "timeout": "0s"}})",
       "methodConfig[0].throttle.adaptive.timeout: must be in (0, 720h], got 0"},
      {R"({"adaptive": {"tolerance": "NaN"}})",
       "methodConfig[0].throttle.adaptive.tolerance: must be in [0, 10], got nan"},
      {R"({"adaptive": {"speed": 1}})", "speed"},
  };
  for (const auto& [json, message] : cases) {
    absl::StatusOr<PolicyTable> set = Load(json);
    ASSERT_FALSE(set.ok()) << json;
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(set.status().message()), HasSubstr(message)) << json;
  }
}

// Fields only the other algorithm reads: loaded, and a warning says so.
TEST(AdaptiveThrottlePolicyTest, TheOtherAlgorithmsFieldsAreAWarning) {
  absl::StatusOr<PolicyTable> set =
      Load(R"({"adaptive": {"algorithm": "AIMD", "tolerance": 0.1, "baselineSamples": 5}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(),
              ElementsAre("methodConfig[0].throttle.adaptive: baselineSamples, tolerance are not "
                          "used by algorithm AIMD, ignored"));
  set = Load(R"({"adaptive": {"timeout": "1s"}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(), ElementsAre("methodConfig[0].throttle.adaptive: timeout is not "
                                           "used by algorithm GRADIENT, ignored"));
}

}  // namespace
}  // namespace resilience
