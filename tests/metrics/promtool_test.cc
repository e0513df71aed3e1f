// The exposition text passes Prometheus' own checker, `promtool check
// metrics` (Debian package prometheus; scripts/common.sh installs it):
// parsing and lint (naming, units, _total, HELP).

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/metrics/sample_exposition.h"
#include "tests/testing/subprocess.h"

#ifndef PROMTOOL_PATH
#define PROMTOOL_PATH ""
#endif

namespace resilience {
namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::RunCommand;

constexpr char kPromtool[] = PROMTOOL_PATH;

CommandResult CheckMetrics(const std::string& text) {
  return RunCommand({kPromtool, "check", "metrics"}, text, absl::Seconds(60));
}

#define SKIP_WITHOUT_PROMTOOL()                                                                \
  if (std::string(kPromtool).empty()) {                                                        \
    GTEST_SKIP() << "promtool was not found when the build was configured (Debian package "    \
                    "prometheus; scripts/test.sh installs it): the exposition is not checked"; \
  }

TEST(PromtoolTest, EveryKindOfMetricPasses) {
  SKIP_WITHOUT_PROMTOOL();
  absl::Status status;
  const std::string text = testing::RenderSampleExposition(&status);
  ASSERT_TRUE(status.ok()) << status;
  const CommandResult result = CheckMetrics(text);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err << "\n--- text:\n" << text;
  EXPECT_EQ(result.out + result.err, "");
}

// The check discriminates: a malformed exposition and one that breaks the
// naming rules fail it.
TEST(PromtoolTest, BrokenTextFails) {
  SKIP_WITHOUT_PROMTOOL();
  const CommandResult malformed = CheckMetrics("# TYPE x counter\nx_total{a=\"b} 1\n");
  EXPECT_NE(malformed.exit_code, 0) << malformed.out << malformed.err;
  const CommandResult lint = CheckMetrics(
      "# HELP calls Calls.\n# TYPE calls counter\ncalls 1\n");  // a counter without _total
  EXPECT_NE(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_NE(lint.out + lint.err, "");
}

}  // namespace
}  // namespace resilience
