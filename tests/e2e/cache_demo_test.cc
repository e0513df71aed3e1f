// The cache service demo (examples/cache_service/cache_demo_main.cc) run as
// a newcomer runs it. A test binary of its own, run alone (RUN_SERIAL): its
// load sections keep both cores busy for seconds, which would starve the
// timing of the end-to-end tests beside it.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::RunCommand;
using ::testing::HasSubstr;

// The demo runs to completion: every scripted step happened as described.
TEST(CacheDemoTest, EveryStepGoesAsExpected) {
  CommandResult r = RunCommand({CACHE_DEMO_PATH}, "", absl::Seconds(60));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("every step went as expected"));
}

}  // namespace
