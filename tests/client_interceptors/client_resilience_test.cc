// ClientResilience's per-method state: every configured method gets its
// policy however many there are; only names no one vouches for are bounded.

#include "src/client_interceptors/client_resilience_impl.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace resilience {

// The per-method state is the interceptors' business; this test looks at it
// through the engine behind the public object.
class ClientResilienceTestPeer {
 public:
  static std::shared_ptr<ClientMethodState> ForMethod(ClientResilience& resilience,
                                                      const char* method) {
    return resilience.impl()->ForMethod(method);
  }
};

namespace testing {
namespace {

// A policy naming `n` methods of service s.S one by one, each with a breaker.
std::string ManyMethods(int n) {
  std::string names;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&names, i == 0 ? "" : ",", R"({"service": "s.S", "method": "M)", i, R"("})");
  }
  return absl::StrCat(R"({"methodConfig": [{"name": [)", names,
                      R"(], "breaker": {"sre": {}}}]})");
}

TEST(ClientResilienceTest, EveryConfiguredMethodGetsItsPolicy) {
  constexpr int kMethods = 10000;
  static_assert(kMethods > MethodCache<ClientMethodState>::kMaxUnvouchedNames);
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(ManyMethods(kMethods));
  ASSERT_TRUE(policies.ok()) << policies.status();
  ClientResilience resilience(*std::move(policies), ClientResilience::Options{});
  // Names that match nothing come first and fill the unvouched quota.
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back(absl::StrCat("/other.S/X", i));
  for (int i = 0; i < kMethods; ++i) names.push_back(absl::StrCat("/s.S/M", i));
  int with_breaker = 0;
  for (const std::string& name : names) {
    std::shared_ptr<ClientMethodState> state =
        ClientResilienceTestPeer::ForMethod(resilience, name.c_str());
    if (state != nullptr && state->breaker != nullptr) ++with_breaker;
  }
  EXPECT_EQ(with_breaker, kMethods);
  EXPECT_TRUE(resilience.BreakerSnapshotOf("/s.S/M9999").has_value());
  // No retryThrottling in the policy file: none on the channel.
  EXPECT_FALSE(resilience.retry_throttle().has_value());
}

}  // namespace
}  // namespace testing
}  // namespace resilience
