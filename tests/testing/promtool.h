// File: tests/testing/promtool.h
//
// Prometheus' own checker of exposition text, `promtool check metrics`
// (Debian package prometheus; scripts/test.sh installs it): parsing and lint
// (naming, units, _total, HELP). Found when the build is configured: the
// test target defines PROMTOOL_PATH, empty when there is none.
//
// Example:
//   TEST(MyMetricsTest, PromtoolAcceptsTheText) {
//     RESILIENCE_SKIP_WITHOUT_PROMTOOL();
//     ExpectPromtoolAccepts(Render());
//   }

#ifndef GRPC_RESILIENCE_TESTS_TESTING_PROMTOOL_H_
#define GRPC_RESILIENCE_TESTS_TESTING_PROMTOOL_H_

#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

#ifndef PROMTOOL_PATH
#define PROMTOOL_PATH ""
#endif

namespace resilience::testing {

inline constexpr char kPromtoolPath[] = PROMTOOL_PATH;

// Why a test that needs promtool skips.
inline constexpr char kPromtoolMissing[] =
    "promtool was not found when the build was configured (Debian package prometheus; "
    "scripts/test.sh installs it): the exposition is not checked";

// Skips the test (GTEST_SKIP) when there is no promtool.
#define RESILIENCE_SKIP_WITHOUT_PROMTOOL()                                   \
  if (std::string(::resilience::testing::kPromtoolPath).empty()) {           \
    GTEST_SKIP() << ::resilience::testing::kPromtoolMissing;                 \
  }

// CheckWithPromtool()
//
// What `promtool check metrics` says of `text`.
inline CommandResult CheckWithPromtool(const std::string& text) {
  return RunCommand({kPromtoolPath, "check", "metrics"}, text, absl::Seconds(60));
}

// ExpectPromtoolAccepts()
//
// `text` passes the check, with nothing to say.
inline void ExpectPromtoolAccepts(const std::string& text) {
  const CommandResult result = CheckWithPromtool(text);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err << "\n--- text:\n" << text;
  EXPECT_EQ(result.out + result.err, "");
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_PROMTOOL_H_
