// File: tests/policy/bulkhead_policy_test.cc
//
// bulkhead: the client's bound on its calls in flight; its defaults, its
// errors (path and value named) and the settings that cannot act (warnings).

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BulkheadPolicyTest, ReadsEveryField) {
  PolicyTable set =
      MustParse(Entry(R"("bulkhead": {"maxConcurrency": 8, "maxQueue": 4, "maxWait": "0.1s"})"));
  const std::optional<Bulkhead::Options>& b = set.Find("/s.S/M").policy->bulkhead;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->max_concurrency, 8);
  EXPECT_EQ(b->max_queue, 4);
  EXPECT_EQ(b->max_wait, absl::Milliseconds(100));
  EXPECT_TRUE(set.warnings().empty());
}

TEST(BulkheadPolicyTest, DefaultsToNoQueue) {
  PolicyTable set = MustParse(Entry(R"("bulkhead": {"maxConcurrency": 2})"));
  const std::optional<Bulkhead::Options>& b = set.Find("/s.S/M").policy->bulkhead;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->max_queue, 0);
  EXPECT_EQ(b->max_wait, absl::ZeroDuration());
  EXPECT_FALSE(MustParse(Entry(R"("timeout": "1s")")).Find("/s.S/M").policy->bulkhead);
}

TEST(BulkheadPolicyTest, ErrorsNameThePathAndTheValue) {
  EXPECT_EQ(ErrorOf(Entry(R"("bulkhead": {"maxQueue": 2})")),
            "methodConfig[0].bulkhead.maxConcurrency: required (the calls in flight at once, "
            ">= 1)");
  EXPECT_EQ(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 0})")),
            "methodConfig[0].bulkhead.maxConcurrency: must be in [1, 1000000], got 0");
  EXPECT_EQ(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxQueue": -1})")),
            "methodConfig[0].bulkhead.maxQueue: must be in [0, 1000000], got -1");
  EXPECT_EQ(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxQueue": 2000000})")),
            "methodConfig[0].bulkhead.maxQueue: must be in [0, 1000000], got 2000000");
  EXPECT_THAT(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxWait": "-1s"})")),
              HasSubstr("methodConfig[0].bulkhead.maxWait: must be in [0, 1h], got -1s"));
  EXPECT_THAT(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxWait": "7200s"})")),
              HasSubstr("methodConfig[0].bulkhead.maxWait: must be in [0, 1h], got 2h"));
  EXPECT_THAT(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": "0x2"})")),
              HasSubstr("methodConfig[0].bulkhead.maxConcurrency"));
  EXPECT_THAT(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "queue": 2})")),
              HasSubstr("queue"));
}

TEST(BulkheadPolicyTest, SettingsThatCannotActAreWarnings) {
  EXPECT_THAT(WarningsOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxQueue": 3})")),
              ElementsAre("methodConfig[0].bulkhead.maxQueue: 3 has no effect with "
                          "methodConfig[0].bulkhead.maxWait 0s (a call that finds no slot "
                          "fails at once)"));
  EXPECT_THAT(WarningsOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "maxWait": "1s"})")),
              ElementsAre("methodConfig[0].bulkhead.maxWait: 1s has no effect with "
                          "methodConfig[0].bulkhead.maxQueue 0 (no call waits)"));
}

}  // namespace
}  // namespace resilience
