// PerCallerLimits: validation, key hashing, the cap on tracked keys with
// eviction of the least recently used idle key, the default bucket, and the
// fair share each key gets, on a simulated clock.

#include "src/limits/per_caller_limits.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/limits/per_caller_limits_testing.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using Verdict = PerCallerLimits::Verdict;

using ::resilience::testing::kCrit;
using ::resilience::testing::kShares;

// The per-server limits {max_concurrency, rate_per_second, burst, max_keys}.
struct PerServer {
  int64_t max_concurrency;
  double rate_per_second;
  int64_t burst;
  int64_t max_keys;
};

PerCallerLimits::Options Limits(const PerServer& l) {
  PerCallerLimits::Options o;
  o.max_concurrency = l.max_concurrency;
  o.rate_per_second = l.rate_per_second;
  o.burst = l.burst;
  o.max_keys = l.max_keys;
  return o;
}

std::unique_ptr<PerCallerLimits> Make(const PerCallerLimits::Options& options, Clock& clock) {
  return testing::MakePerCaller(options, clock);
}

TEST(PerCallerLimitsTest, ValidateNamesFieldAndValue) {
  PerCallerLimits::Options o;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(), HasSubstr("set max_concurrency"));
  o.max_concurrency = -1;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(),
              HasSubstr("max_concurrency: must be in [1, 1000000], got -1"));
  o.max_concurrency = 2;
  o.max_keys = 0;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(),
              HasSubstr("max_keys: must be in [1, 1000000], got 0"));
  o.max_keys = 2'000'000;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(), HasSubstr("got 2000000"));
  o.max_keys = 10;
  EXPECT_TRUE(PerCallerLimits::Validate(o).ok());
  o.burst = 3;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(), HasSubstr("burst: needs rate_per_second"));
  o.rate_per_second = 1e12;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(), HasSubstr("rate_per_second"));
  o.rate_per_second = 10;
  EXPECT_TRUE(PerCallerLimits::Validate(o).ok());
}

TEST(PerCallerLimitsTest, KeysBeyondTheBoundOrNotPrintableAreHashed) {
  bool hashed = true;
  EXPECT_EQ(PerCallerLimits::StoredKey("tenant-7", &hashed), "tenant-7");
  EXPECT_FALSE(hashed);
  EXPECT_EQ(PerCallerLimits::StoredKey("", &hashed), "");
  EXPECT_FALSE(hashed);
  const std::string exact(PerCallerLimits::kMaxKeyBytes, 'k');
  EXPECT_EQ(PerCallerLimits::StoredKey(exact, &hashed), exact);
  EXPECT_FALSE(hashed);
  const std::vector<std::string> junk = {
      std::string(PerCallerLimits::kMaxKeyBytes + 1, 'k'), std::string("a\0b", 3), "a b",
      "\xff\xfe", "#0123456789abcdef", std::string(1 << 20, 'x')};
  for (const std::string& raw : junk) {
    const std::string stored = PerCallerLimits::StoredKey(raw, &hashed);
    EXPECT_TRUE(hashed) << raw.size();
    EXPECT_EQ(stored.size(), 17u);
    EXPECT_EQ(stored[0], '#');
    EXPECT_EQ(stored, PerCallerLimits::HashedKey(raw));  // stable
  }
  // A key posing as a hash is hashed itself: "#..." is never a raw key.
  EXPECT_NE(PerCallerLimits::StoredKey(PerCallerLimits::HashedKey("x")),
            PerCallerLimits::HashedKey("x"));
  // FNV-1a 64 of "" is its offset basis: the hash is the documented one.
  EXPECT_EQ(PerCallerLimits::HashedKey(""), "#cbf29ce484222325");
  EXPECT_EQ(PerCallerLimits::HashedKey("a"), "#af63dc4c8601ec8c");
}

TEST(PerCallerLimitsTest, EachKeyHasItsOwnConcurrency) {
  SimulatedClock clock;
  auto limits = Make(Limits({2, 0, 0, 10}), clock);
  auto a1 = limits->TryAcquire("a", kShares, kCrit);
  auto a2 = limits->TryAcquire("a", kShares, kCrit);
  auto a3 = limits->TryAcquire("a", kShares, kCrit);
  EXPECT_EQ(a1.verdict, Verdict::kAdmitted);
  EXPECT_EQ(a2.verdict, Verdict::kAdmitted);
  EXPECT_EQ(a3.verdict, Verdict::kConcurrency);
  EXPECT_EQ(a3.key, "a");
  EXPECT_EQ(a3.cap, 2);
  // Another caller is not affected by a's calls.
  auto b1 = limits->TryAcquire("b", kShares, kCrit);
  EXPECT_EQ(b1.verdict, Verdict::kAdmitted);
  a1.slot.Release();
  EXPECT_EQ(limits->TryAcquire("a", kShares, kCrit).verdict, Verdict::kAdmitted);
  EXPECT_EQ(limits->rejected_concurrency(), 1);
  EXPECT_EQ(limits->keys_tracked(), 2);
}

TEST(PerCallerLimitsTest, SheddableSeesItsShareOfAKeysLimit) {
  SimulatedClock clock;
  auto limits = Make(Limits({4, 0, 0, 10}), clock);
  auto c1 = limits->TryAcquire("a", kShares, kCrit);
  auto c2 = limits->TryAcquire("a", kShares, kCrit);
  auto shed = limits->TryAcquire("a", kShares, Criticality::kSheddable);
  EXPECT_EQ(shed.verdict, Verdict::kConcurrency);
  EXPECT_EQ(shed.cap, 2);
  EXPECT_EQ(limits->TryAcquire("a", kShares, kCrit).verdict, Verdict::kAdmitted);
}

TEST(PerCallerLimitsTest, EachKeyHasItsOwnRate) {
  SimulatedClock clock;
  auto limits = Make(Limits({0, 10, 2, 10}), clock);
  EXPECT_EQ(limits->TryAcquire("noisy", kShares, kCrit).verdict, Verdict::kAdmitted);
  EXPECT_EQ(limits->TryAcquire("noisy", kShares, kCrit).verdict, Verdict::kAdmitted);
  auto refused = limits->TryAcquire("noisy", kShares, kCrit);
  EXPECT_EQ(refused.verdict, Verdict::kRate);
  EXPECT_EQ(refused.retry_after, absl::Milliseconds(100));
  EXPECT_FALSE(refused.slot.held());
  EXPECT_EQ(limits->TryAcquire("quiet", kShares, kCrit).verdict, Verdict::kAdmitted);
  clock.AdvanceTime(absl::Milliseconds(100));
  EXPECT_EQ(limits->TryAcquire("noisy", kShares, kCrit).verdict, Verdict::kAdmitted);
  EXPECT_EQ(limits->TryAcquire("noisy", kShares, kCrit).verdict, Verdict::kRate);
  EXPECT_EQ(limits->rejected_rate(), 2);
}

TEST(PerCallerLimitsTest, NoKeySharesTheDefaultBucket) {
  SimulatedClock clock;
  auto limits = Make(Limits({1, 0, 0, 10}), clock);
  auto first = limits->TryAcquire("", kShares, kCrit);
  EXPECT_EQ(first.verdict, Verdict::kAdmitted);
  EXPECT_TRUE(first.default_bucket);
  EXPECT_EQ(limits->TryAcquire("", kShares, kCrit).verdict, Verdict::kConcurrency);
  EXPECT_EQ(limits->keys_tracked(), 0);
}

TEST(PerCallerLimitsTest, FullTableEvictsTheLeastRecentlyUsedIdleKey) {
  SimulatedClock clock;
  auto limits = Make(Limits({0, 1, 1, 3}), clock);
  for (const char* key : {"a", "b", "c"}) {
    EXPECT_EQ(limits->TryAcquire(key, kShares, kCrit).verdict, Verdict::kAdmitted);
  }
  // a is used again (refused: its bucket is empty), so b is the least recent.
  EXPECT_EQ(limits->TryAcquire("a", kShares, kCrit).verdict, Verdict::kRate);
  EXPECT_EQ(limits->TryAcquire("d", kShares, kCrit).verdict, Verdict::kAdmitted);
  EXPECT_EQ(limits->evicted(), 1);
  EXPECT_EQ(limits->keys_tracked(), 3);
  // a and c kept their empty buckets; b was forgotten and starts full.
  EXPECT_EQ(limits->TryAcquire("a", kShares, kCrit).verdict, Verdict::kRate);
  EXPECT_EQ(limits->TryAcquire("c", kShares, kCrit).verdict, Verdict::kRate);
  EXPECT_EQ(limits->TryAcquire("b", kShares, kCrit).verdict, Verdict::kAdmitted);
  EXPECT_EQ(limits->evicted(), 2);  // d went for b
  EXPECT_EQ(limits->TryAcquire("d", kShares, kCrit).verdict, Verdict::kAdmitted);
}

TEST(PerCallerLimitsTest, KeysWithCallsInFlightAreNotEvictedNewOnesShareTheDefault) {
  SimulatedClock clock;
  auto limits = Make(Limits({1, 0, 0, 2}), clock);
  auto a = limits->TryAcquire("a", kShares, kCrit);
  auto b = limits->TryAcquire("b", kShares, kCrit);
  auto c = limits->TryAcquire("c", kShares, kCrit);
  EXPECT_EQ(c.verdict, Verdict::kAdmitted);
  EXPECT_TRUE(c.default_bucket);
  EXPECT_EQ(limits->overflowed(), 1);
  EXPECT_EQ(limits->evicted(), 0);
  // d shares c's default bucket, whose one slot c holds.
  EXPECT_EQ(limits->TryAcquire("d", kShares, kCrit).verdict, Verdict::kConcurrency);
  // a and b still hold their limits.
  EXPECT_EQ(limits->TryAcquire("a", kShares, kCrit).verdict, Verdict::kConcurrency);
  b.slot.Release();
  auto d = limits->TryAcquire("d", kShares, kCrit);
  EXPECT_EQ(d.verdict, Verdict::kAdmitted);
  EXPECT_FALSE(d.default_bucket);
  EXPECT_EQ(limits->evicted(), 1);
}

TEST(PerCallerLimitsTest, MemoryStaysBoundedUnderAFloodOfKeys) {
  SimulatedClock clock;
  auto limits = Make(Limits({0, 100, 10, 100}), clock);
  for (int i = 0; i < 10'000; ++i) {
    const std::string key = i % 2 == 0 ? absl::StrCat("tenant-", i)
                                       : std::string(1000 + i % 7, static_cast<char>(i));
    EXPECT_EQ(limits->TryAcquire(key, kShares, kCrit).verdict, Verdict::kAdmitted);
  }
  EXPECT_EQ(limits->keys_tracked(), 100);
  EXPECT_EQ(limits->hashed(), 5000);
  EXPECT_GE(limits->evicted(), 10'000 - 100 - 5000);
}

TEST(PerCallerLimitsTest, FairShareANoisyKeyDoesNotTakeTheOthersRate) {
  // Ten keys at 10/s each over 10 simulated seconds: nine ask 10/s, one
  // asks 100/s. Each of the nine gets all it asks; the noisy one its share.
  SimulatedClock clock;
  auto limits = Make(Limits({0, 10, 10, 16}), clock);
  std::vector<int> admitted(10, 0);
  for (int tick = 0; tick < 1000; ++tick) {  // 10 ms ticks
    clock.AdvanceTime(absl::Milliseconds(10));
    for (int key = 0; key < 10; ++key) {
      const bool asks = key == 0 || tick % 10 == key % 10;
      if (asks && limits->TryAcquire(absl::StrCat("t", key), kShares, kCrit).verdict ==
                      Verdict::kAdmitted) {
        ++admitted[key];
      }
    }
  }
  for (int key = 1; key < 10; ++key) EXPECT_EQ(admitted[key], 100) << key;
  EXPECT_GE(admitted[0], 100);
  EXPECT_LE(admitted[0], 110);  // its rate and its one burst
}

}  // namespace
}  // namespace resilience
