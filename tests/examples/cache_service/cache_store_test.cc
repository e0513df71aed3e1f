#include "examples/cache_service/cache_store.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cache_service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

CacheStore::Options SmallStore(size_t max_entries, size_t max_value_bytes = 1024,
                               size_t max_total_bytes = 1 << 20) {
  CacheStore::Options options;
  options.max_entries = max_entries;
  options.max_value_bytes = max_value_bytes;
  options.max_total_bytes = max_total_bytes;
  return options;
}

// A stored value comes back unchanged, including every byte value.
TEST(CacheStoreTest, StoresAndGetsBinaryValues) {
  CacheStore store(SmallStore(10));
  std::string value;
  for (int b = 0; b < 256; ++b) value.push_back(static_cast<char>(b));
  ASSERT_TRUE(store.Store("bin", value).ok());
  absl::StatusOr<std::string> got = store.Get("bin");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
}

// A missing key is NOT_FOUND and the message names the key.
TEST(CacheStoreTest, MissingKeyIsNotFoundNamingTheKey) {
  CacheStore store(SmallStore(10));
  absl::StatusOr<std::string> got = store.Get("nothing-here");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("nothing-here"));
}

// Empty keys are refused by both Get and Store.
TEST(CacheStoreTest, EmptyKeyIsInvalidArgument) {
  CacheStore store(SmallStore(10));
  EXPECT_EQ(store.Get("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Store("", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.GetStats().entries, 0u);
}

// A value over the limit is refused, naming its size and the limit; one at
// the limit is accepted.
TEST(CacheStoreTest, OversizedValueIsRefusedWithSizeAndLimit) {
  CacheStore store(SmallStore(10, /*max_value_bytes=*/100));
  absl::Status s = store.Store("k", std::string(101, 'x'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("101 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("limit of 100 bytes"));
  EXPECT_TRUE(store.Store("k", std::string(100, 'x')).ok());
}

// Past max_entries the least recently used entry goes, and a Get counts as a
// use.
TEST(CacheStoreTest, EvictsLeastRecentlyUsed) {
  CacheStore store(SmallStore(3));
  ASSERT_TRUE(store.Store("a", "1").ok());
  ASSERT_TRUE(store.Store("b", "2").ok());
  ASSERT_TRUE(store.Store("c", "3").ok());
  ASSERT_TRUE(store.Get("a").ok());  // now b is the least recently used
  ASSERT_TRUE(store.Store("d", "4").ok());
  EXPECT_EQ(store.Get("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("a").ok());
  EXPECT_TRUE(store.Get("c").ok());
  EXPECT_TRUE(store.Get("d").ok());
  EXPECT_EQ(store.GetStats().entries, 3u);
  EXPECT_EQ(store.GetStats().evictions, 1u);
}

// Replacing a value does not add an entry and counts as a use.
TEST(CacheStoreTest, ReplaceKeepsOneEntryAndRefreshes) {
  CacheStore store(SmallStore(2));
  ASSERT_TRUE(store.Store("a", "1").ok());
  ASSERT_TRUE(store.Store("b", "2").ok());
  ASSERT_TRUE(store.Store("a", "one").ok());
  ASSERT_TRUE(store.Store("c", "3").ok());  // evicts b, not a
  EXPECT_EQ(*store.Get("a"), "one");
  EXPECT_FALSE(store.Get("b").ok());
  EXPECT_EQ(store.GetStats().total_bytes, std::string("a").size() + 3 + 1 + 1);
}

// Past max_total_bytes, old entries are evicted until the bytes fit.
TEST(CacheStoreTest, EvictsByTotalBytes) {
  CacheStore store(SmallStore(100, /*max_value_bytes=*/10, /*max_total_bytes=*/25));
  ASSERT_TRUE(store.Store("a", std::string(10, 'x')).ok());  // 11 bytes
  ASSERT_TRUE(store.Store("b", std::string(10, 'x')).ok());  // 22 bytes
  ASSERT_TRUE(store.Store("c", std::string(10, 'x')).ok());  // 33 -> evict a
  EXPECT_FALSE(store.Get("a").ok());
  EXPECT_EQ(store.GetStats().total_bytes, 22u);
}

// A key and value that alone exceed the byte limit are refused, not stored
// by evicting everything else.
TEST(CacheStoreTest, EntryLargerThanTotalLimitIsRefused) {
  CacheStore store(SmallStore(100, /*max_value_bytes=*/10, /*max_total_bytes=*/12));
  ASSERT_TRUE(store.Store("a", "x").ok());
  absl::Status s = store.Store(std::string(5, 'k'), std::string(10, 'v'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("total limit of 12 bytes"));
  EXPECT_TRUE(store.Get("a").ok());
}

// Dump lists every entry in key order, whatever the insertion order, and does
// not change what gets evicted next.
TEST(CacheStoreTest, DumpIsInKeyOrder) {
  CacheStore store(SmallStore(3));
  ASSERT_TRUE(store.Store("b", "2").ok());
  ASSERT_TRUE(store.Store("c", "3").ok());
  ASSERT_TRUE(store.Store("a", "1").ok());
  EXPECT_THAT(store.Dump(), ElementsAre(Pair("a", "1"), Pair("b", "2"), Pair("c", "3")));
  ASSERT_TRUE(store.Store("d", "4").ok());  // b is still the oldest
  EXPECT_FALSE(store.Get("b").ok());
}

// Invalid options are named with their value.
TEST(CacheStoreTest, ValidateNamesTheField) {
  EXPECT_THAT(CacheStore::Validate(SmallStore(0)).message(), HasSubstr("max_entries"));
  EXPECT_THAT(CacheStore::Validate(SmallStore(1, 0)).message(), HasSubstr("max_value_bytes"));
  EXPECT_THAT(CacheStore::Validate(SmallStore(1, 100, 50)).message(),
              HasSubstr("max_total_bytes: must be >= max_value_bytes (100), got 50"));
  EXPECT_TRUE(CacheStore::Validate(CacheStore::Options()).ok());
}

// Concurrent writers and readers never exceed the bounds and never lose the
// accounting: total bytes always equal the bytes of what is stored.
TEST(CacheStoreTest, ConcurrentUseKeepsBoundsAndAccounting) {
  CacheStore store(SmallStore(50, 64, 1 << 20));
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        const std::string key = absl::StrCat("k", (i * 7 + t) % 200);
        if (i % 3 == 0) {
          (void)store.Get(key);
        } else if (i % 101 == 0) {
          (void)store.Dump();
        } else {
          ASSERT_TRUE(store.Store(key, std::string(i % 64, 'v')).ok());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const CacheStore::Stats stats = store.GetStats();
  EXPECT_LE(stats.entries, 50u);
  size_t bytes = 0;
  for (const auto& [key, value] : store.Dump()) bytes += key.size() + value.size();
  EXPECT_EQ(stats.total_bytes, bytes);
  EXPECT_EQ(store.Dump().size(), stats.entries);
}

}  // namespace
}  // namespace cache_service
