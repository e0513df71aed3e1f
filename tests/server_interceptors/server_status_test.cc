// ServerResilience::AppendStatus() on a fresh server (issue 40 item 12: a
// server with a throttle on Get showed "server_methods": [] until Get's
// first call): every method the policies name is listed with its limits
// from the start, and a called method keeps its row.

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/server_interceptors/server_resilience_impl.h"
#include "tests/testing/policy_update_test_peer.h"

namespace resilience {
namespace testing {
namespace {

PolicySet Load(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : PolicySet();
}

const ServerMethodStatus* Row(const StatusReport& report, const std::string& method) {
  for (const ServerMethodStatus& row : report.server_methods) {
    if (row.method == method) return &row;
  }
  return nullptr;
}

TEST(ServerStatusTest, ConfiguredMethodsAreListedBeforeTheirFirstCall) {
  SimulatedClock clock;
  ServerResilienceImpl impl(Load(R"({"methodConfig": [
      {"name": [{"service": "s.S", "method": "Get"}],
       "throttle": {"maxConcurrency": 4, "ratePerSecond": 100, "burst": 10}},
      {"name": [{"service": "s.S", "method": "Put"}],
       "throttle": {"adaptive": {"algorithm": "AIMD", "initialLimit": 7}}},
      {"name": [{"service": "s.S", "method": "Slow"}],
       "faultInjection": {"delay": "0.5s", "delayFraction": 0.5}}]})"),
                            clock, nullptr);
  StatusReport report;
  impl.AppendStatus(report, "cache");
  ASSERT_EQ(report.server_methods.size(), 3u);
  EXPECT_EQ(report.server_methods[0].method, "/s.S/Get");  // in method order
  EXPECT_EQ(report.server_methods[1].method, "/s.S/Put");
  EXPECT_EQ(report.server_methods[2].method, "/s.S/Slow");
  const ServerMethodStatus& get = report.server_methods[0];
  EXPECT_EQ(get.server, "cache");
  EXPECT_EQ(get.concurrency_limit, 4);
  EXPECT_FALSE(get.adaptive_limit);
  EXPECT_EQ(get.rate_limit, 100);
  EXPECT_EQ(get.rate_burst, 10);
  EXPECT_EQ(get.admitted, 0);
  const ServerMethodStatus& put = report.server_methods[1];
  EXPECT_TRUE(put.adaptive_limit);
  EXPECT_EQ(put.concurrency_limit, 7);
  EXPECT_EQ(put.rate_limit, 0);
  EXPECT_EQ(report.server_methods[2].concurrency_limit, 0);

  // Once Get has a state (its first call), its row is the state's, once.
  ASSERT_NE(PolicyUpdateTestPeer::ForMethod(impl, "/s.S/Get"), nullptr);
  report = StatusReport();
  impl.AppendStatus(report, "cache");
  ASSERT_EQ(report.server_methods.size(), 3u);
  ASSERT_NE(Row(report, "/s.S/Get"), nullptr);
  EXPECT_EQ(Row(report, "/s.S/Get")->concurrency_limit, 4);
  EXPECT_EQ(Row(report, "/s.S/Get")->rate_limit, 100);
}

}  // namespace
}  // namespace testing
}  // namespace resilience
