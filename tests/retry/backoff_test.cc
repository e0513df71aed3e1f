// Backoff: exponential growth, the cap, proportional and full jitter, the
// bounds of its delays whatever the options, and Validate()'s rules.

#include "src/retry/backoff.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/fake_random.h"

namespace resilience {
namespace {

using ::resilience::testing::FakeRandom;
using ::testing::HasSubstr;

// The base delay grows by the multiplier up to the cap; jitter spans
// [1 - j, 1 + j] of it.
TEST(BackoffTest, ExponentialWithProportionalJitter) {
  FakeRandom random(0.5);  // the middle of the jitter range: no jitter
  Backoff backoff({absl::Milliseconds(50), absl::Milliseconds(300), 2.0, 0.2, false}, random);
  EXPECT_EQ(backoff.Delay(1), absl::Milliseconds(50));
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Delay(3), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Delay(4), absl::Milliseconds(300));  // capped
  EXPECT_EQ(backoff.Delay(10), absl::Milliseconds(300));
  random.Set(0.0);
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(80));   // 100 x 0.8
  random.Set(0.999999);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(backoff.Delay(2)), 120, 0.001);  // 100 x 1.2
}

// Full jitter draws in [0, base].
TEST(BackoffTest, FullJitter) {
  FakeRandom random(0.25);
  Backoff backoff({absl::Milliseconds(100), absl::Seconds(1), 2.0, 0.2, true}, random);
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(50));  // 200 x 0.25
  random.Set(0.0);
  EXPECT_EQ(backoff.Delay(3), absl::ZeroDuration());
}

// Seeded draws stay within the jitter bounds.
TEST(BackoffTest, SeededDrawsStayInBounds) {
  SplitMixRandom random(42);
  Backoff backoff({absl::Milliseconds(50), absl::Seconds(1), 2.0, 0.2, false}, random);
  for (int i = 0; i < 10000; ++i) {
    const absl::Duration d = backoff.Delay(2);
    ASSERT_GE(d, absl::Milliseconds(80));
    ASSERT_LE(d, absl::Milliseconds(120));
  }
}

// Backoff stays in [0, max_backoff * (1 + jitter)] for any attempt number, also when
// multiplier^(n-1) overflows or the options are degenerate.
TEST(BackoffBoundsTest, DelayStaysBoundedAtAnyAttempt) {
  SplitMixRandom random(7);
  const Backoff::Options options[] = {
      {absl::Milliseconds(50), absl::Hours(1), 2.0, 1.0, false},
      {absl::Hours(1), absl::Hours(1), std::numeric_limits<double>::max(), 0.2, false},
      {absl::ZeroDuration(), absl::Seconds(1), std::numeric_limits<double>::max(), 0.2, true},
      {absl::Nanoseconds(1), absl::Seconds(1), 1.0, 0.0, false},
  };
  for (const Backoff::Options& o : options) {
    Backoff backoff(o, random);
    for (int n : {std::numeric_limits<int>::min(), -1, 0, 1, 2, 10, 1100, 1 << 30,
                  std::numeric_limits<int>::max()}) {
      const absl::Duration d = backoff.Delay(n);
      EXPECT_GE(d, absl::ZeroDuration()) << n;
      EXPECT_LE(d, o.max_backoff * (1 + o.jitter) + absl::Nanoseconds(1)) << n;
    }
  }
}

// The defaults are valid and are the ones documented (gRPC's retryPolicy
// has none; these are the library's, declared once in Backoff::Options).
TEST(BackoffTest, DefaultOptions) {
  const Backoff::Options o;
  EXPECT_EQ(o.initial_backoff, absl::Milliseconds(50));
  EXPECT_EQ(o.max_backoff, absl::Seconds(1));
  EXPECT_EQ(o.backoff_multiplier, 2.0);
  EXPECT_EQ(o.jitter, 0.2);
  EXPECT_FALSE(o.full_jitter);
  EXPECT_TRUE(Backoff::Validate(o).ok());
}

// Each rule, with the field and the value in the message; Create() refuses
// what Validate() refuses, and the bounds themselves are accepted.
TEST(BackoffTest, Validation) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto with = [](auto change) {
    Backoff::Options o;
    change(o);
    return o;
  };
  const std::vector<std::pair<Backoff::Options, std::string>> refused = {
      {with([](auto& o) { o.initial_backoff = absl::ZeroDuration(); }),
       "backoff.initial_backoff: must be in (0, 1h], got 0"},
      {with([](auto& o) { o.initial_backoff = -absl::Seconds(1); }),
       "backoff.initial_backoff: must be in (0, 1h], got -1s"},
      {with([](auto& o) {
         o.initial_backoff = absl::Hours(1) + absl::Nanoseconds(1);
         o.max_backoff = absl::Hours(2);
       }),
       "backoff.initial_backoff: must be in (0, 1h], got 1h0.000000001s"},
      {with([](auto& o) { o.max_backoff = absl::Hours(2); }),
       "backoff.max_backoff: must be in (0, 1h], got 2h"},
      {with([](auto& o) { o.max_backoff = absl::InfiniteDuration(); }),
       "backoff.max_backoff: must be in (0, 1h], got inf"},
      {with([](auto& o) {
         o.initial_backoff = absl::Seconds(2);
         o.max_backoff = absl::Seconds(1);
       }),
       "backoff.max_backoff: must be >= initial_backoff (2s), got 1s"},
      {with([](auto& o) { o.backoff_multiplier = 0.5; }),
       "backoff.backoff_multiplier: must be >= 1, got 0.5"},
      {with([&](auto& o) { o.backoff_multiplier = kNan; }),
       "backoff.backoff_multiplier: must be >= 1, got nan"},
      {with([&](auto& o) { o.backoff_multiplier = kInf; }),
       "backoff.backoff_multiplier: must be >= 1, got inf"},
      {with([](auto& o) { o.jitter = -0.1; }), "backoff.jitter: must be in [0, 1], got -0.1"},
      {with([](auto& o) { o.jitter = 1.5; }), "backoff.jitter: must be in [0, 1], got 1.5"},
      {with([&](auto& o) { o.jitter = kNan; }), "backoff.jitter: must be in [0, 1], got nan"},
  };
  FakeRandom random(0.5);
  for (const auto& [options, expected] : refused) {
    const absl::Status status = Backoff::Validate(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expected;
    EXPECT_EQ(status.message(), expected);
    EXPECT_EQ(Backoff::Create(options, random).status(), status);
  }
  const std::vector<Backoff::Options> accepted = {
      with([](auto& o) {
        o.initial_backoff = absl::Nanoseconds(1);
        o.max_backoff = absl::Nanoseconds(1);
      }),
      with([](auto& o) {
        o.initial_backoff = absl::Hours(1);
        o.max_backoff = absl::Hours(1);
      }),
      with([](auto& o) {
        o.backoff_multiplier = 1.0;
        o.jitter = 0.0;
      }),
      with([](auto& o) {
        o.backoff_multiplier = std::numeric_limits<double>::max();
        o.jitter = 1.0;
        o.full_jitter = true;
      }),
  };
  for (const Backoff::Options& options : accepted) {
    EXPECT_TRUE(Backoff::Validate(options).ok()) << Backoff::Validate(options);
    absl::StatusOr<Backoff> backoff = Backoff::Create(options, random);
    ASSERT_TRUE(backoff.ok()) << backoff.status();
    EXPECT_EQ(backoff->options().initial_backoff, options.initial_backoff);
    EXPECT_LE(backoff->Delay(3), options.max_backoff * (1 + options.jitter));
  }
}

}  // namespace
}  // namespace resilience
