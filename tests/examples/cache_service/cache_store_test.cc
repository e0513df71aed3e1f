#include "examples/cache_service/cache_store.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cache_service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

using Entries = std::vector<std::pair<std::string, std::string>>;

CacheStore::Options SmallStore(size_t max_entries, size_t max_value_bytes = 1024,
                               size_t max_total_bytes = 1 << 20) {
  CacheStore::Options options;
  options.max_entries = max_entries;
  options.max_value_bytes = max_value_bytes;
  options.max_total_bytes = max_total_bytes;
  return options;
}

// Every entry, walked with EntriesAfter() `max_entries` at a time.
Entries DumpAll(const CacheStore& store, size_t max_entries = 2) {
  Entries all;
  std::string cursor;
  for (Entries run = store.EntriesAfter(cursor, max_entries, 1 << 20); !run.empty();
       run = store.EntriesAfter(cursor, max_entries, 1 << 20)) {
    cursor = run.back().first;
    for (auto& entry : run) all.push_back(std::move(entry));
  }
  return all;
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

// A walk lists every entry in key order, whatever the insertion order, and
// does not change what gets evicted next.
TEST(CacheStoreTest, DumpIsInKeyOrder) {
  CacheStore store(SmallStore(3));
  ASSERT_TRUE(store.Store("b", "2").ok());
  ASSERT_TRUE(store.Store("c", "3").ok());
  ASSERT_TRUE(store.Store("a", "1").ok());
  EXPECT_THAT(DumpAll(store), ElementsAre(Pair("a", "1"), Pair("b", "2"), Pair("c", "3")));
  EXPECT_THAT(DumpAll(store, 1), ElementsAre(Pair("a", "1"), Pair("b", "2"), Pair("c", "3")));
  ASSERT_TRUE(store.Store("d", "4").ok());  // b is still the oldest
  EXPECT_FALSE(store.Get("b").ok());
}

// EntriesAfter() stops at max_entries or before passing max_bytes, but always
// returns the next entry if there is one, however large; it resumes after
// any key, stored or not; it is empty past the last key.
TEST(CacheStoreTest, EntriesAfterIsBoundedByEntriesAndBytes) {
  CacheStore store(SmallStore(10));
  ASSERT_TRUE(store.Store("a", std::string(9, 'x')).ok());    // 10 bytes
  ASSERT_TRUE(store.Store("b", std::string(9, 'x')).ok());    // 10 bytes
  ASSERT_TRUE(store.Store("c", std::string(99, 'x')).ok());   // 100 bytes
  ASSERT_TRUE(store.Store("d", std::string(9, 'x')).ok());    // 10 bytes
  auto keys = [](const Entries& entries) {
    std::vector<std::string> out;
    for (const auto& entry : entries) out.push_back(entry.first);
    return out;
  };
  EXPECT_THAT(keys(store.EntriesAfter("", 10, 1000)), ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(keys(store.EntriesAfter("", 3, 1000)), ElementsAre("a", "b", "c"));
  EXPECT_THAT(keys(store.EntriesAfter("", 10, 20)), ElementsAre("a", "b"));
  EXPECT_THAT(keys(store.EntriesAfter("", 10, 19)), ElementsAre("a"));
  EXPECT_THAT(keys(store.EntriesAfter("b", 10, 20)), ElementsAre("c"));  // over 20 by itself
  EXPECT_THAT(keys(store.EntriesAfter("bb", 10, 1000)), ElementsAre("c", "d"));
  EXPECT_THAT(keys(store.EntriesAfter("c", 10, 1000)), ElementsAre("d"));
  EXPECT_THAT(store.EntriesAfter("d", 10, 1000), IsEmpty());
  EXPECT_THAT(store.EntriesAfter("zzz", 10, 1000), IsEmpty());
  EXPECT_THAT(CacheStore(SmallStore(10)).EntriesAfter("", 10, 1000), IsEmpty());
  EXPECT_EQ(store.EntriesAfter("b", 1, 1000)[0].second, std::string(99, 'x'));
}

// Keys are bytes: any byte value, ordered as unsigned chars, so "\xff" sorts
// after "z" and "\0" after the empty start.
TEST(CacheStoreTest, KeysAreAnyBytesInByteOrder) {
  CacheStore store(SmallStore(10));
  const std::string nul("\0", 1);
  ASSERT_TRUE(store.Store("\xff\xfe", "1").ok());
  ASSERT_TRUE(store.Store("z", "2").ok());
  ASSERT_TRUE(store.Store(nul, "3").ok());
  EXPECT_EQ(*store.Get("\xff\xfe"), "1");
  EXPECT_EQ(*store.Get(nul), "3");
  EXPECT_THAT(store.Get("\xff").status().message(), HasSubstr("\\377"));  // C-escaped
  EXPECT_THAT(DumpAll(store, 1),
              ElementsAre(Pair(nul, "3"), Pair("z", "2"), Pair("\xff\xfe", "1")));
}

// While writers insert, replace and evict, a walk returns every key present
// throughout exactly once, in strictly increasing order. The walk is run many
// times against the writers.
TEST(CacheStoreTest, WalkDuringWritesSeesStableKeysOnce) {
  // Room for every key, so the stable keys ("s...") are never evicted; the
  // churning keys ("c...") come and go by replacement and by the byte limit.
  CacheStore store(SmallStore(1000, 64, 4000));
  std::vector<std::string> stable;
  for (int i = 0; i < 20; ++i) {
    stable.push_back(absl::StrCat("s", 100 + i));
    ASSERT_TRUE(store.Store(stable.back(), "0").ok());
  }
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&store, &stable, &done, t] {
      for (int i = 0; !done.load(); ++i) {
        // Churning keys sort before, between and after the stable ones.
        const std::string key = absl::StrCat(i % 3 == 0 ? "a" : i % 3 == 1 ? "s1" : "t", t, i % 97);
        ASSERT_TRUE(store.Store(key, std::string(i % 64, 'c')).ok());
        // Keep the stable keys the most recently used, so eviction by bytes
        // takes churning keys only.
        ASSERT_TRUE(store.Store(stable[i % stable.size()], absl::StrCat(i)).ok());
      }
    });
  }
  std::string failure;  // the first one; the writers are stopped before it is reported
  for (int walk = 0; walk < 200 && failure.empty(); ++walk) {
    const Entries all = DumpAll(store, 1 + walk % 7);
    std::vector<std::string> keys;
    for (const auto& entry : all) keys.push_back(entry.first);
    if (std::adjacent_find(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
          return a >= b;
        }) != keys.end()) {
      failure = absl::StrCat("walk ", walk, ": keys not strictly increasing");
    }
    for (const std::string& key : stable) {
      if (!std::binary_search(keys.begin(), keys.end(), key)) {
        failure = absl::StrCat("walk ", walk, ": ", key, " missing");
      }
    }
  }
  done = true;
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(failure, "");
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
          (void)DumpAll(store, 8);
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
  const Entries all = DumpAll(store, 8);
  for (const auto& [key, value] : all) bytes += key.size() + value.size();
  EXPECT_EQ(stats.total_bytes, bytes);
  EXPECT_EQ(all.size(), stats.entries);
}

}  // namespace
}  // namespace cache_service
