// ServerResilience::Update() on a SimulatedClock, without calls: a fixed
// concurrency limit lowered while calls hold slots keeps counting them (the
// same limiter, resized: never a negative or leaked count), an unchanged
// method keeps its state whole, a method that gains a throttle gets one,
// and the reload's event and metrics.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/server_interceptors/server_resilience_impl.h"
#include "tests/testing/policy_update_test_peer.h"
#include "tests/testing/recording_events.h"

namespace resilience {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGet[] = "/s.S/Get";
constexpr char kDump[] = "/s.S/Dump";

// Get: 4 at once and 100 calls/s; Dump: `dump_limit` at once.
std::string Policies(int dump_limit, const std::string& more = "") {
  return absl::StrCat(R"({"methodConfig": [
    {"name": [{"service": "s.S", "method": "Get"}],
     "throttle": {"maxConcurrency": 4, "ratePerSecond": 100, "burst": 10}},
    {"name": [{"service": "s.S", "method": "Dump"}],
     "throttle": {"maxConcurrency": )",
                      dump_limit, R"(}})", more, R"(]})");
}

PolicySet Load(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : PolicySet();
}

class ServerPolicyUpdateTest : public ::testing::Test {
 protected:
  std::shared_ptr<ServerMethodState> State(const char* method) {
    return PolicyUpdateTestPeer::ForMethod(impl_, method);
  }

  SimulatedClock clock_;
  std::shared_ptr<RecordingEvents> events_ = std::make_shared<RecordingEvents>();
  ServerResilienceImpl impl_{Load(Policies(8)), clock_, events_};
};

// Dump's limit goes from 8 to 2 while 5 calls hold a slot: they keep it and
// give it back to the same limiter; no new call is admitted until fewer
// than 2 are in flight.
TEST_F(ServerPolicyUpdateTest, LoweredLimitKeepsTheSlotsInFlight) {
  const std::shared_ptr<ServerMethodState> old_dump = State(kDump);
  ConcurrencyLimiter& limiter = *old_dump->limits->concurrency;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(limiter.TryAcquire());

  absl::StatusOr<PolicyUpdate> update = impl_.Update(Load(Policies(2)));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_THAT(update->changed, ElementsAre(kDump));

  const std::shared_ptr<ServerMethodState> dump = State(kDump);
  EXPECT_NE(dump, old_dump);
  EXPECT_EQ(dump->tally, old_dump->tally);
  ASSERT_EQ(dump->limits->concurrency.get(), &limiter);
  EXPECT_EQ(limiter.limit(), 2);
  EXPECT_EQ(limiter.in_flight(), 5);
  EXPECT_FALSE(dump->limits->concurrency->TryAcquire());
  // The calls in flight end, through the state they started with.
  for (int i = 0; i < 4; ++i) old_dump->limits->concurrency->Release(Outcome::kSuccess, {});
  EXPECT_EQ(limiter.in_flight(), 1);
  EXPECT_TRUE(dump->limits->concurrency->TryAcquire());
  EXPECT_FALSE(dump->limits->concurrency->TryAcquire());
  old_dump->limits->concurrency->Release(Outcome::kSuccess, {});
  dump->limits->concurrency->Release(Outcome::kSuccess, {});
  EXPECT_EQ(limiter.in_flight(), 0);
  PrometheusText text;
  impl_.AppendMetrics(text);
  EXPECT_THAT(text.Finish(),
              HasSubstr("grpc_resilience_server_concurrency_limit{grpc_method=\"/s.S/Dump\"} 2"));
}

// Get's policy is the same: its state is the same object, with its slots in
// flight and its rate bucket's tokens.
TEST_F(ServerPolicyUpdateTest, UnchangedMethodKeepsItsStateWhole) {
  const std::shared_ptr<ServerMethodState> get = State(kGet);
  ASSERT_TRUE(get->limits->concurrency->TryAcquire());
  // The whole burst: the bucket is empty until the clock moves.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(get->limits->rate->TryAcquire());
  ASSERT_FALSE(get->limits->rate->TryAcquire());
  State(kDump);
  ASSERT_TRUE(impl_.Update(Load(Policies(2))).ok());
  EXPECT_EQ(State(kGet), get);
  EXPECT_EQ(get->limits->concurrency->in_flight(), 1);
  EXPECT_FALSE(State(kGet)->limits->rate->TryAcquire());  // still empty: not a new bucket
  get->limits->concurrency->Release(Outcome::kSuccess, {});
}

// Only a client's settings change (Get gains a timeout, retries and a
// breaker): nothing changed for the server, which keeps Get's state whole.
TEST_F(ServerPolicyUpdateTest, ClientSettingsAreNoChangeOfTheServer) {
  const std::shared_ptr<ServerMethodState> get = State(kGet);
  std::string policies = Policies(8);
  const std::string throttle = R"("throttle": {"maxConcurrency": 4)";
  ASSERT_NE(policies.find(throttle), std::string::npos);
  policies.insert(policies.find(throttle), R"("timeout": "1s", "breaker": {"sre": {"k": 2}},
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}, )");
  absl::StatusOr<PolicyUpdate> update = impl_.Update(Load(policies));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_THAT(update->changed, ::testing::IsEmpty());
  EXPECT_EQ(update->Summary(), "no method changed");
  EXPECT_EQ(State(kGet), get);
}

// A method without a throttle gains one (the first throttle of the server:
// the factories start looking), and the event names it.
TEST_F(ServerPolicyUpdateTest, AddedThrottleAndTheEvent) {
  ServerResilienceImpl bare(Load(R"({"methodConfig": []})"), clock_, events_);
  EXPECT_FALSE(PolicyUpdateTestPeer::ForMethod(bare, kDump)->limits != nullptr);
  absl::StatusOr<PolicyUpdate> update = bare.Update(Load(Policies(2)));
  ASSERT_TRUE(update.ok());
  EXPECT_THAT(update->added, ElementsAre(kDump, kGet));
  EXPECT_EQ(PolicyUpdateTestPeer::ForMethod(bare, kDump)->limits->concurrency->limit(), 2);
  EXPECT_THAT(events_->lines(),
              ElementsAre("policies reloaded on server (generation 2): 2 methods added "
                          "(added /s.S/Dump, /s.S/Get)"));
  PrometheusText text;
  bare.AppendMetrics(text);
  const std::string metrics = text.Finish();
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_policy_generation 2"));
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_policy_reload_failures_total 0"));
}

}  // namespace
}  // namespace testing
}  // namespace resilience
