// The order of a ServerCall's stages (server_call.h), over real channels to
// an in-process server (sync and callback APIs): drain, then throttle, then
// fault injection, then the meter. Each test fails when two stages swap.

#include "src/server_interceptors/server_call.h"

#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::kGet;
using ::testing::HasSubstr;

class ServerCallTest : public testing::ServerInterceptorsTest {};

// Get limited to one call at once.
constexpr char kGetConcurrency1[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 1}}]})";

// Get limited to one call at once, and every call of it aborted.
constexpr char kGetConcurrency1Aborted[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 1},
   "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1.0, "seed": 1}}]})";

// Drain before throttle: a call refused by a drain is not judged by the
// throttle (neither admitted nor rejected by it, whatever its limit says),
// and gets the drain's answer, not the throttle's.
TEST_P(ServerCallTest, DrainedCallIsNotCountedByTheThrottle) {
  Start(kGetConcurrency1);
  // The method's only slot is taken by a call held in its handler.
  PendingCall* held = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  const ServerMethodStats before = state_->Stats(kGet);
  EXPECT_EQ(before.admitted, 1);

  bool all_done = false;
  std::thread drain([&] { all_done = state_->Drain(absl::Now() + absl::Seconds(20)); });
  ASSERT_TRUE(Eventually([&] { return state_->draining(); }));
  const grpc::Status refused = Get("fast");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("server shutting down"));
  const ServerMethodStats during = state_->Stats(kGet);
  EXPECT_EQ(during.admitted, 1);
  EXPECT_EQ(during.rejected_concurrency, 0);
  EXPECT_EQ(during.in_flight, 1);

  gate_.Open();
  ASSERT_TRUE(held->done.WaitForNotificationWithTimeout(testing::kLong));
  EXPECT_TRUE(held->status.ok());
  drain.join();
  EXPECT_TRUE(all_done);
  EXPECT_EQ(state_->Stats(kGet).in_flight, 0);
}

// Throttle before fault injection: the throttle admits a call (it takes and
// gives back the slot) before fault injection aborts it, and a call the
// throttle rejects is never aborted.
TEST_P(ServerCallTest, FaultInjectionJudgesCallsAfterTheThrottleAdmitted) {
  Start(kGetConcurrency1Aborted);
  for (int i = 0; i < 3; ++i) {
    const grpc::Status aborted = Get("fast");
    EXPECT_EQ(aborted.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(aborted.error_message(), HasSubstr("fault injected"));
  }
  ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.admitted, 3);
  EXPECT_EQ(stats.faults_aborted, 3);
  EXPECT_EQ(stats.in_flight, 0);
  EXPECT_EQ(counters_.get_bodies.load(), 0);
}

// The same with the slot taken (a client-side view of "throttle first"):
// with the method's only slot held, calls are the throttle's rejections,
// and fault injection draws nothing for them.
TEST_P(ServerCallTest, ThrottleRejectionComesBeforeFaultInjection) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 1},
     "faultInjection": {"delay": "0.2s", "delayFraction": 1.0, "seed": 1}}]})");
  PendingCall* held = StartGet("fast");  // delayed 0.2 s, holding the slot
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).faults_delayed == 1; }));
  const grpc::Status rejected = Get("fast");
  EXPECT_EQ(rejected.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_concurrency, 1);
  EXPECT_EQ(stats.faults_delayed, 1);
  EXPECT_EQ(stats.admitted, 1);
  ASSERT_TRUE(held->done.WaitForNotificationWithTimeout(testing::kLong));
  EXPECT_TRUE(held->status.ok());
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, ServerCallTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience
