// ClientResilience::Update() on a SimulatedClock, without calls: per
// method, an unchanged policy keeps its state object whole (breaker state
// and window, retry budget tokens), a changed one is rebuilt carrying its
// counters and what its algorithm can keep, a state held by a call in flight
// is never touched, and a file that fails to load changes nothing.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "tests/testing/policy_update_test_peer.h"
#include "src/core/simulated_clock.h"
#include "tests/testing/recording_events.h"

namespace resilience {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGet[] = "/s.S/Get";
constexpr char kPut[] = "/s.S/Put";

// Get: a three-state breaker (4 calls, half failing, open a minute) and a
// retry budget of 10 tokens; Put: an SRE breaker; `put_k` varies Put alone.
std::string Policies(const std::string& put_k, const std::string& get_open = "60s",
                     const std::string& more = "") {
  return absl::StrCat(R"({"methodConfig": [
    {"name": [{"service": "s.S", "method": "Get"}],
     "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
     "retryBudget": {"maxTokens": 10, "tokenRatio": 0.1},
     "breaker": {"threeState": {"minRequests": 4, "failureRateThreshold": 0.5,
                                "openDuration": ")",
                      get_open, R"("}}},
    {"name": [{"service": "s.S", "method": "Put"}],
     "breaker": {"sre": {"k": )",
                      put_k, R"(}}})", more, R"(]})");
}

PolicySet Load(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : PolicySet();
}

class ClientPolicyUpdateTest : public ::testing::Test {
 protected:
  ClientPolicyUpdateTest() {
    ClientResilience::Options options;
    options.name = "ch";
    options.events = events_;
    impl_ = std::make_shared<ClientResilienceImpl>(Load(Policies("2")), options, clock_);
  }

  std::shared_ptr<ClientMethodState> State(const char* method) {
    return PolicyUpdateTestPeer::ForMethod(*impl_, method);
  }

  // Four failures through Get's breaker: it opens.
  void TripGet() {
    Breaker& breaker = *State(kGet)->breaker;
    for (int i = 0; i < 4; ++i) {
      Admission a = breaker.Allow();
      ASSERT_TRUE(a.admitted());
      clock_.AdvanceTime(absl::Milliseconds(10));
      a.Record(Outcome::kFailure, absl::Milliseconds(10));
    }
    ASSERT_EQ(breaker.Snapshot().state, BreakerState::kOpen);
  }

  SimulatedClock clock_;
  std::shared_ptr<RecordingEvents> events_ = std::make_shared<RecordingEvents>();
  std::shared_ptr<ClientResilienceImpl> impl_;
};

// Put's policy changes, Get's does not: Get keeps the very same state
// (its open breaker with its window, its retry budget's tokens), Put gets a
// new one whose counters go on.
TEST_F(ClientPolicyUpdateTest, UnchangedMethodKeepsItsStateWhole) {
  TripGet();
  const std::shared_ptr<ClientMethodState> get = State(kGet);
  const std::shared_ptr<ClientMethodState> put = State(kPut);
  put->calls.fetch_add(7);
  ASSERT_TRUE(get->retry_decider != nullptr);
  const BreakerSnapshot before = get->breaker->Snapshot();

  absl::StatusOr<PolicyUpdate> update = impl_->Update(Load(Policies("3")));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_EQ(update->generation, 2);
  EXPECT_THAT(update->changed, ElementsAre(kPut));
  EXPECT_EQ(update->unchanged, 1);
  EXPECT_EQ(update->Summary(), "1 method changed");

  EXPECT_EQ(State(kGet), get);  // the same object: breaker, window, budget, deciders
  const BreakerSnapshot after = State(kGet)->breaker->Snapshot();
  EXPECT_EQ(after.state, BreakerState::kOpen);
  EXPECT_EQ(after.counts, before.counts);
  EXPECT_EQ(after.generation, before.generation);

  const std::shared_ptr<ClientMethodState> new_put = State(kPut);
  EXPECT_NE(new_put, put);
  EXPECT_NE(new_put->breaker, put->breaker);
  EXPECT_EQ(new_put->tally, put->tally);
  EXPECT_EQ(impl_->Stats(kPut).calls, 7);
  EXPECT_EQ(impl_->generation(), 2);
}

// A state a call holds (it started before the update) keeps the policy it
// started with; calls after the update get the new one.
TEST_F(ClientPolicyUpdateTest, CallInFlightKeepsItsGeneration) {
  const std::shared_ptr<ClientMethodState> in_flight = State(kPut);
  const double k_before = 2;
  ASSERT_TRUE(impl_->Update(Load(Policies("4"))).ok());
  EXPECT_EQ(in_flight->policy->breaker.sre.k, k_before);
  EXPECT_EQ(State(kPut)->policy->breaker.sre.k, 4);
  // The old state's breaker still works for the call that holds it.
  Admission a = in_flight->breaker->Allow();
  EXPECT_TRUE(a.admitted());
  a.Record(Outcome::kSuccess, absl::Milliseconds(1));
}

// Get's breaker settings change (a shorter open period), the algorithm does
// not: the new breaker starts open, its period counted from the old trip,
// and an operator's forced mode stays.
TEST_F(ClientPolicyUpdateTest, ChangedBreakerOfTheSameAlgorithmStaysOpen) {
  TripGet();
  clock_.AdvanceTime(absl::Seconds(5));
  ASSERT_TRUE(impl_->Update(Load(Policies("2", "20s"))).ok());
  Breaker& breaker = *State(kGet)->breaker;
  EXPECT_EQ(breaker.Snapshot().state, BreakerState::kOpen);
  EXPECT_FALSE(breaker.Allow().admitted());
  clock_.AdvanceTime(absl::Seconds(15));  // 20 s after the trip
  Admission probe = breaker.Allow();
  EXPECT_TRUE(probe.admitted());
  EXPECT_EQ(breaker.Snapshot().state, BreakerState::kHalfOpen);
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));

  ASSERT_TRUE(impl_->ControlBreaker(kPut, BreakerCommand::kForceOpen, "test").ok());
  ASSERT_TRUE(impl_->Update(Load(Policies("5", "20s"))).ok());
  EXPECT_EQ(State(kPut)->breaker->Snapshot().mode, BreakerMode::kForceOpen);
}

// Methods added and removed are named; the event says it all in one line.
TEST_F(ClientPolicyUpdateTest, AddedAndRemovedMethodsAndTheEvent) {
  State(kGet);
  const std::string added = R"(, {"name": [{"service": "s.S", "method": "Dump"}],
                                 "timeout": "1s"})";
  absl::StatusOr<PolicyUpdate> update = impl_->Update(Load(Policies("2", "60s", added)));
  ASSERT_TRUE(update.ok());
  EXPECT_THAT(update->added, ElementsAre("/s.S/Dump"));
  EXPECT_EQ(update->unchanged, 2);
  update = impl_->Update(Load(R"({"methodConfig": []})"));
  ASSERT_TRUE(update.ok());
  EXPECT_THAT(update->removed, ElementsAre("/s.S/Dump", kGet, kPut));
  EXPECT_EQ(State(kGet)->policy, nullptr);
  EXPECT_EQ(State(kGet)->breaker, nullptr);
  EXPECT_THAT(events_->lines(),
              ElementsAre("policies reloaded on channel ch (generation 2): 1 method added "
                          "(added /s.S/Dump)",
                          "policies reloaded on channel ch (generation 3): 3 methods removed "
                          "(removed /s.S/Dump, /s.S/Get, /s.S/Put)"));
}

// Only a server's settings change (Get gains a throttle, Put a fault
// injection and a criticality): nothing changed for the client, which keeps
// both states whole.
TEST_F(ClientPolicyUpdateTest, ServerSettingsAreNoChangeOfTheClient) {
  TripGet();
  const std::shared_ptr<ClientMethodState> get = State(kGet);
  const std::shared_ptr<ClientMethodState> put = State(kPut);
  std::string policies = Policies("2");
  const auto insert = [&policies](const std::string& before, const std::string& text) {
    const size_t at = policies.find(before);
    ASSERT_NE(at, std::string::npos) << before;
    policies.insert(at, text);
  };
  insert(R"("retryBudget")", R"("throttle": {"maxConcurrency": 4}, )");
  insert(R"("breaker": {"sre")",
         R"("faultInjection": {"delay": "0.2s"}, "criticality": {"default": "SHEDDABLE"}, )");
  absl::StatusOr<PolicyUpdate> update = impl_->Update(Load(policies));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_THAT(update->changed, ::testing::IsEmpty());
  EXPECT_EQ(update->unchanged, 2);
  EXPECT_EQ(update->Summary(), "no method changed");
  EXPECT_EQ(State(kGet), get);
  EXPECT_EQ(State(kPut), put);
}

// loadBalancingConfig and healthCheckConfig are the channel's service
// config, which a live channel cannot change on gRPC 1.51: a change is one
// warning naming the channel, the fields and their values, and what applies
// them; the same settings again warn of nothing.
TEST_F(ClientPolicyUpdateTest, LoadBalancingChangeIsAWarning) {
  const std::string balanced = absl::StrCat(
      R"({"loadBalancingConfig": [{"round_robin": {}}],
          "healthCheckConfig": {"serviceName": "s.S"}, )",
      Policies("2").substr(1));
  absl::StatusOr<PolicyUpdate> update = impl_->Update(Load(balanced));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_EQ(update->Summary(), "no method changed");
  EXPECT_THAT(update->warnings,
              ElementsAre("channel ch: loadBalancingConfig none -> [{\"round_robin\": {}}]; "
                          "healthCheckConfig.serviceName none -> \"s.S\": not applied: gRPC "
                          "1.51 cannot change a live channel's service config, the channel "
                          "keeps the one it was created with; a restart (a new channel) "
                          "applies them"));
  update = impl_->Update(Load(balanced));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_THAT(update->warnings, ::testing::IsEmpty());
  update = impl_->Update(Load(absl::StrCat(R"({"loadBalancingPolicy": "pick_first", )",
                                           Policies("2").substr(1))));
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_THAT(update->warnings,
              ElementsAre("channel ch: loadBalancingConfig [{\"round_robin\": {}}] -> none; "
                          "loadBalancingPolicy none -> \"pick_first\"; "
                          "healthCheckConfig.serviceName \"s.S\" -> none: not applied: gRPC "
                          "1.51 cannot change a live channel's service config, the channel "
                          "keeps the one it was created with; a restart (a new channel) "
                          "applies them"));
}

// A file that does not load changes nothing, and says why with its path.
TEST_F(ClientPolicyUpdateTest, BrokenFileChangesNothing) {
  TripGet();
  const std::shared_ptr<ClientMethodState> get = State(kGet);
  const std::string path = ::testing::TempDir() + "/broken_policies.json";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"methodConfig": [{"name": [{}], "timeout": "-1s"}]})", f);
  std::fclose(f);
  absl::StatusOr<PolicyUpdate> update = impl_->ReloadFile(path, {});
  ASSERT_FALSE(update.ok());
  EXPECT_THAT(std::string(update.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(update.status().message()), HasSubstr("timeout"));
  EXPECT_EQ(State(kGet), get);
  EXPECT_EQ(impl_->generation(), 1);
  EXPECT_EQ(impl_->failed_reloads(), 1);
  PrometheusText text;
  impl_->AppendMetrics(text);
  const std::string metrics = text.Finish();
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_client_policy_generation{channel=\"ch\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("grpc_resilience_client_policy_reload_failures_total{channel=\"ch\"} 1"));
  ASSERT_EQ(events_->lines().size(), 1u);
  EXPECT_THAT(events_->lines()[0],
              HasSubstr("policy reload on channel ch from " + path +
                        " failed, generation 1 stays in force: "));
}

}  // namespace
}  // namespace testing
}  // namespace resilience
