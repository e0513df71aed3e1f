// The exposition text passes Prometheus' own checker, `promtool check
// metrics` (Debian package prometheus; scripts/common.sh installs it):
// parsing and lint (naming, units, _total, HELP).

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/metrics/sample_exposition.h"
#include "tests/testing/promtool.h"
#include "tests/testing/subprocess.h"

namespace resilience {
namespace {

using ::resilience::testing::CheckWithPromtool;
using ::resilience::testing::CommandResult;
using ::resilience::testing::ExpectPromtoolAccepts;

TEST(PromtoolTest, EveryKindOfMetricPasses) {
  RESILIENCE_SKIP_WITHOUT_PROMTOOL();
  absl::Status status;
  const std::string text = testing::RenderSampleExposition(&status);
  ASSERT_TRUE(status.ok()) << status;
  ExpectPromtoolAccepts(text);
}

// The check discriminates: a malformed exposition and one that breaks the
// naming rules fail it.
TEST(PromtoolTest, BrokenTextFails) {
  RESILIENCE_SKIP_WITHOUT_PROMTOOL();
  const CommandResult malformed = CheckWithPromtool("# TYPE x counter\nx_total{a=\"b} 1\n");
  EXPECT_NE(malformed.exit_code, 0) << malformed.out << malformed.err;
  const CommandResult lint = CheckWithPromtool(
      "# HELP calls Calls.\n# TYPE calls counter\ncalls 1\n");  // a counter without _total
  EXPECT_NE(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_NE(lint.out + lint.err, "");
}

}  // namespace
}  // namespace resilience
