// MethodCache on its own: each name resolved once, the lock-free lookup by
// the name's address, the name lookup behind it, the bound on names no one
// vouches for, and concurrent lookups.

#include "src/core/method_cache.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::UnorderedElementsAre;

// What the tests keep per method: the name it was made for.
struct State {
  std::string method;
};

using Cache = MethodCache<State>;

// The states' addresses (the cache hands out shared_ptrs).
std::vector<State*> Raw(const std::vector<std::shared_ptr<State>>& states) {
  std::vector<State*> raw;
  for (const std::shared_ptr<State>& state : states) raw.push_back(state.get());
  return raw;
}

// A resolver that makes a State for every name (vouched for or not, as
// asked) and counts its calls.
struct Resolver {
  Cache::Resolution operator()(const char* method) {
    ++calls;
    return {std::make_unique<State>(State{method}), vouched};
  }
  bool vouched = true;
  int calls = 0;
};

// The first Find() resolves; later ones, by the same address or by another
// copy of the same text, return the same state without resolving again.
TEST(MethodCacheTest, ResolvesEachNameOnce) {
  Cache cache;
  Resolver resolve;
  static const char kGet[] = "/a.S/Get";
  State* state = cache.Find(kGet, resolve).get();
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->method, "/a.S/Get");
  EXPECT_EQ(cache.Find(kGet, resolve).get(), state);
  const std::string copy = "/a.S/Get";  // same text, another address
  EXPECT_EQ(cache.Find(copy.c_str(), resolve).get(), state);
  EXPECT_EQ(resolve.calls, 1);
  EXPECT_EQ(cache.Get("/a.S/Get").get(), state);
  EXPECT_EQ(cache.Get("/a.S/Store").get(), nullptr);  // never resolved
}

// A name resolved to null ("nothing to do for this method") is remembered
// as such: the resolver is not asked again, and States() leaves it out.
TEST(MethodCacheTest, NullIsResolvedOnceToo) {
  Cache cache;
  int calls = 0;
  const auto nothing = [&calls](const char*) {
    ++calls;
    return Cache::Resolution{nullptr, /*vouched=*/true};
  };
  EXPECT_EQ(cache.Find("/a.S/None", nothing).get(), nullptr);
  EXPECT_EQ(cache.Find("/a.S/None", nothing).get(), nullptr);
  EXPECT_EQ(calls, 1);
  Resolver resolve;
  State* get = cache.Find("/a.S/Get", resolve).get();
  EXPECT_THAT(Raw(cache.States()), UnorderedElementsAre(get));
}

// The address-keyed fast path answers without the lock: while a resolver
// holds it (it runs under the cache's mutex), another thread's Find() of a
// name already cached by that address returns at once, and the same
// Find() by another address of the same text waits for the lock.
TEST(MethodCacheTest, FastPathHitTakesNoLock) {
  Cache cache;
  Resolver resolve;
  static const char kGet[] = "/a.S/Get";
  State* const get = cache.Find(kGet, resolve).get();
  ASSERT_NE(get, nullptr);
  const std::string copy = "/a.S/Get";

  std::atomic<State*> by_address{nullptr};
  std::atomic<State*> by_text{nullptr};
  bool fast_path_returned_under_lock = false;
  bool slow_path_returned_under_lock = true;
  absl::Notification address_found, text_found;
  std::thread address_lookup, text_lookup;
  const auto holding_the_lock = [&](const char* method) {
    address_lookup = std::thread([&] {
      by_address = cache.Find(kGet, resolve).get();
      address_found.Notify();
    });
    fast_path_returned_under_lock =
        address_found.WaitForNotificationWithTimeout(absl::Seconds(10));
    text_lookup = std::thread([&] {
      by_text = cache.Find(copy.c_str(), resolve).get();
      text_found.Notify();
    });
    slow_path_returned_under_lock =
        text_found.WaitForNotificationWithTimeout(absl::Milliseconds(200));
    return Cache::Resolution{std::make_unique<State>(State{method}), true};
  };
  ASSERT_NE(cache.Find("/a.S/Store", holding_the_lock).get(), nullptr);
  address_lookup.join();
  text_lookup.join();
  EXPECT_TRUE(fast_path_returned_under_lock);
  EXPECT_FALSE(slow_path_returned_under_lock);
  EXPECT_EQ(by_address.load(), get);
  EXPECT_EQ(by_text.load(), get);
  EXPECT_EQ(resolve.calls, 1);
}

// A hit by address is confirmed by the text: a buffer reused for another
// name gets that name's state, never the old one's.
TEST(MethodCacheTest, ReusedAddressNeverReturnsAnotherMethodsState) {
  Cache cache;
  Resolver resolve;
  char buffer[32];
  std::strcpy(buffer, "/a.S/Get");
  State* get = cache.Find(buffer, resolve).get();
  std::strcpy(buffer, "/a.S/Put");
  State* put = cache.Find(buffer, resolve).get();
  ASSERT_NE(put, nullptr);
  EXPECT_NE(put, get);
  EXPECT_EQ(put->method, "/a.S/Put");
  std::strcpy(buffer, "/a.S/Get");
  EXPECT_EQ(cache.Find(buffer, resolve).get(), get);
  EXPECT_EQ(resolve.calls, 2);
}

// More names than fast-path slots all resolve to their own state: names
// whose slot is taken stay on the locked path.
TEST(MethodCacheTest, MoreNamesThanSlots) {
  Cache cache;
  Resolver resolve;
  std::vector<std::string> names;
  for (size_t i = 0; i < 4 * Cache::kSlots; ++i) names.push_back(absl::StrCat("/a.S/M", i));
  std::vector<State*> states;
  for (const std::string& name : names) states.push_back(cache.Find(name.c_str(), resolve).get());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_NE(states[i], nullptr);
    EXPECT_EQ(states[i]->method, names[i]);
    EXPECT_EQ(cache.Find(names[i].c_str(), resolve).get(), states[i]);
  }
  EXPECT_EQ(resolve.calls, static_cast<int>(names.size()));
  EXPECT_EQ(cache.States().size(), names.size());
}

// Names no one vouches for are kept up to kMaxUnvouchedNames; past it, a
// new one gets null and is not kept (asked again, it is resolved again).
// Vouched names are kept however many there are.
TEST(MethodCacheTest, UnvouchedNamesAreBounded) {
  Cache cache;
  Resolver unvouched;
  unvouched.vouched = false;
  std::vector<std::string> names;
  for (size_t i = 0; i <= Cache::kMaxUnvouchedNames; ++i) {
    names.push_back(absl::StrCat("/peer.Made/Up", i));
  }
  for (size_t i = 0; i < Cache::kMaxUnvouchedNames; ++i) {
    ASSERT_NE(cache.Find(names[i].c_str(), unvouched).get(), nullptr) << names[i];
  }
  const int calls = unvouched.calls;
  EXPECT_EQ(cache.Find(names.back().c_str(), unvouched).get(), nullptr);
  EXPECT_EQ(unvouched.calls, calls + 1);
  EXPECT_EQ(cache.Get(names.back()).get(), nullptr);  // not kept
  const std::string another = "/peer.Made/Another";
  EXPECT_EQ(cache.Find(another.c_str(), unvouched).get(), nullptr);
  EXPECT_EQ(cache.Get(another).get(), nullptr);
  // The kept ones stay.
  EXPECT_NE(cache.Get(names.front()).get(), nullptr);
  EXPECT_EQ(cache.States().size(), Cache::kMaxUnvouchedNames);

  Resolver vouched;
  State* configured = cache.Find("/a.S/Configured", vouched).get();
  ASSERT_NE(configured, nullptr);
  EXPECT_EQ(cache.Get("/a.S/Configured").get(), configured);
  EXPECT_EQ(cache.States().size(), Cache::kMaxUnvouchedNames + 1);
}

// Threads looking up the same names at once, by shared addresses and by
// copies of their own, all get the one state per name, resolved once.
TEST(MethodCacheTest, ConcurrentLookupsResolveEachNameOnce) {
  Cache cache;
  std::atomic<int> calls{0};
  const auto resolve = [&calls](const char* method) {
    calls.fetch_add(1);
    return Cache::Resolution{std::make_unique<State>(State{method}), true};
  };
  constexpr int kNames = 16;
  constexpr int kThreads = 4;
  std::vector<std::string> names;
  for (int i = 0; i < kNames; ++i) names.push_back(absl::StrCat("/a.S/M", i));
  std::vector<std::vector<State*>> seen(kThreads, std::vector<State*>(kNames, nullptr));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<std::string> own = names;  // other addresses, same text
      for (int round = 0; round < 500; ++round) {
        for (int i = 0; i < kNames; ++i) {
          const int n = (i + t) % kNames;
          const char* method = round % 2 == 0 ? names[n].c_str() : own[n].c_str();
          State* state = cache.Find(method, resolve).get();
          if (seen[t][n] == nullptr) seen[t][n] = state;
          if (state != seen[t][n] || state == nullptr) {
            ADD_FAILURE() << "thread " << t << " got two states for " << names[n];
            return;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(calls.load(), kNames);
  for (int n = 0; n < kNames; ++n) {
    ASSERT_NE(seen[0][n], nullptr);
    EXPECT_EQ(seen[0][n]->method, names[n]);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][n], seen[0][n]) << names[n];
  }
}

// Replace() swaps a name's state whole: a holder of the old one (a call in
// flight) keeps it intact until it lets go, later lookups, by address or by
// name, get the new one, and a state returned as it was stays the same
// object. A name resolved to null can get a state, and lose it again.
TEST(MethodCacheTest, ReplaceSwapsStatesWhileHoldersKeepTheOld) {
  Cache cache;
  Resolver resolve;
  static const char kGet[] = "/a.S/Get";
  static const char kPut[] = "/a.S/Put";
  const std::shared_ptr<State> old_get = cache.Find(kGet, resolve);
  const std::shared_ptr<State> put = cache.Find(kPut, resolve);
  int none_calls = 0;
  const auto nothing = [&none_calls](const char*) {
    ++none_calls;
    return Cache::Resolution{nullptr, true};
  };
  EXPECT_EQ(cache.Find("/a.S/None", nothing), nullptr);
  std::vector<std::string> visited;
  cache.Replace([&](const std::string& name, std::shared_ptr<State> current) {
    visited.push_back(name);
    if (name == "/a.S/Put") return current;  // unchanged
    return std::make_shared<State>(State{name + " v2"});
  });
  EXPECT_THAT(visited, UnorderedElementsAre("/a.S/Get", "/a.S/Put", "/a.S/None"));
  EXPECT_EQ(old_get->method, "/a.S/Get");  // the holder's state is untouched
  EXPECT_EQ(cache.Find(kGet, resolve)->method, "/a.S/Get v2");
  EXPECT_EQ(cache.Get("/a.S/Get")->method, "/a.S/Get v2");
  EXPECT_EQ(cache.Find(kPut, resolve), put);
  EXPECT_EQ(cache.Find("/a.S/None", nothing)->method, "/a.S/None v2");
  EXPECT_EQ(resolve.calls, 2);  // replaced, never resolved again
  EXPECT_EQ(none_calls, 1);
  cache.Replace([](const std::string&, std::shared_ptr<State>) { return nullptr; });
  EXPECT_EQ(cache.Find(kGet, resolve), nullptr);
  EXPECT_TRUE(cache.States().empty());
  EXPECT_EQ(old_get->method, "/a.S/Get");
}

}  // namespace
}  // namespace resilience
