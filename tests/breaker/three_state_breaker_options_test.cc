// ThreeStateBreaker's options: validation naming the field and value, and
// the documented defaults.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/breaker/three_state_breaker.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// Each invalid option is refused with the field and value named.
TEST(ThreeStateBreakerValidateTest, RefusesInvalidOptions) {
  SimulatedClock clock;
  struct Case {
    std::function<void(ThreeStateBreaker::Options&)> set;
    std::string text;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o.failure_rate_threshold = 0; },
       "three_state.failure_rate_threshold: must be in (0, 1], got 0"},
      {[](auto& o) { o.failure_rate_threshold = 1.5; }, "failure_rate_threshold"},
      {[](auto& o) { o.min_requests = 0; }, "three_state.min_requests: must be >= 1, got 0"},
      {[](auto& o) { o.consecutive_failures = -1; }, "three_state.consecutive_failures"},
      {[](auto& o) { o.slow_call_rate_threshold = 2; }, "three_state.slow_call_rate_threshold"},
      {[](auto& o) { o.slow_call_rate_threshold = 0.5; }, "when slow_call_threshold is not set"},
      {[](auto& o) { o.slow_call_threshold = absl::Seconds(-1); },
       "three_state.slow_call_threshold"},
      {[](auto& o) { o.buckets = 0; }, "three_state.buckets"},
      {[](auto& o) {
         o.window = absl::Seconds(1);
         o.buckets = 3;
       },
       "three_state.window"},
      {[](auto& o) { o.open_duration = absl::ZeroDuration(); },
       "three_state.open_duration: must be > 0"},
      {[](auto& o) { o.open_duration_multiplier = 0.5; }, "three_state.open_duration_multiplier"},
      {[](auto& o) { o.max_open_duration = absl::Seconds(1); },
       "three_state.max_open_duration: must be >= open_duration (5s), got 1s"},
      {[](auto& o) { o.half_open_max_probes = 0; }, "three_state.half_open_max_probes"},
      {[](auto& o) { o.half_open_successes_to_close = 0; },
       "three_state.half_open_successes_to_close"},
      {[](auto& o) { o.probe_interval = absl::Seconds(-1); }, "three_state.probe_interval"},
      {[](auto& o) { o.half_open_max_wait = absl::ZeroDuration(); },
       "three_state.half_open_max_wait"},
      {[](auto& o) { o.probe_overdue = absl::Milliseconds(-1); }, "three_state.probe_overdue"},
  };
  for (const Case& c : cases) {
    ThreeStateBreaker::Options o;
    c.set(o);
    auto b = ThreeStateBreaker::Create(o, clock);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(b.status().message(), HasSubstr(c.text));
  }
  EXPECT_TRUE(ThreeStateBreaker::Create(ThreeStateBreaker::Options(), clock).ok());
}

// Documented defaults (docs/algorithms.md, §3 "Three-state breaker").
TEST(ThreeStateBreakerDefaultsTest, Defaults) {
  ThreeStateBreaker::Options o;
  EXPECT_EQ(o.failure_rate_threshold, 0.5);
  EXPECT_EQ(o.min_requests, 20);
  EXPECT_EQ(o.consecutive_failures, 0);
  EXPECT_EQ(o.window, absl::Seconds(10));
  EXPECT_EQ(o.buckets, 10);
  EXPECT_EQ(o.open_duration, absl::Seconds(5));
  EXPECT_EQ(o.open_duration_multiplier, 2.0);
  EXPECT_EQ(o.max_open_duration, absl::Seconds(60));
  EXPECT_EQ(o.half_open_max_probes, 1);
  EXPECT_EQ(o.half_open_successes_to_close, 1);
  EXPECT_EQ(o.probe_interval, absl::Milliseconds(200));
  EXPECT_EQ(o.half_open_max_wait, absl::Seconds(30));
  EXPECT_EQ(o.mode, BreakerMode::kNormal);
}

}  // namespace
}  // namespace resilience
