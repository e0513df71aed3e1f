// Throttling over real channels to an in-process server (sync and callback
// APIs); the fixture: server_interceptors_fixture.h.

#include "src/server_interceptors/server_interceptors.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"
#include "tests/testing/recording_events.h"

namespace resilience {
namespace {

using ::resilience::testing::Counters;
using ::resilience::testing::Eventually;
using ::resilience::testing::kGet;
using ::resilience::testing::kGetConcurrency3;
using ::resilience::testing::kLong;
using ::resilience::testing::kStore;
using ::resilience::testing::ServerInterceptorsTest;
using ::testing::HasSubstr;



// With maxConcurrency N and a slow handler, N calls run and the rest get
// RESOURCE_EXHAUSTED naming the method and the limit, with a pushback
// trailer; rejected calls never run the handler body; afterwards in_flight
// is exactly 0 and new calls are admitted.
TEST_P(ServerInterceptorsTest, ConcurrencyLimit) {
  Start(kGetConcurrency3);
  std::vector<PendingCall*> running;
  for (int i = 0; i < 3; ++i) running.push_back(StartGet("gated"));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  // No call has finished yet: the pushback is at least the age of the first
  // call running (never a token 1 ms on a saturated scope).
  const absl::Time first_started = absl::Now();
  absl::SleepFor(absl::Milliseconds(100));
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    // The first call's age when this one is sent: the server sees at least
    // that (the answer's way back, which a busy machine can stretch past a
    // few ms, is not counted).
    const absl::Duration age_at_send = absl::Now() - first_started;
    grpc::Status s = Get("gated", &context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(), "/cache.v1.CacheService/Get: concurrency limit 3 reached");
    auto pushback = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
    ASSERT_NE(pushback, context.GetServerTrailingMetadata().end());
    int64_t ms = 0;
    ASSERT_TRUE(absl::SimpleAtoi(
        absl::string_view(pushback->second.data(), pushback->second.size()), &ms));
    EXPECT_GE(ms, absl::ToInt64Milliseconds(age_at_send) - 5);
    EXPECT_LE(ms, 10000);  // the default maxPushback
  }
  EXPECT_EQ(counters_.get_bodies.load(), 3);
  EXPECT_EQ(state_->Stats(kGet).in_flight, 3);
  EXPECT_EQ(state_->Stats(kGet).rejected_concurrency, 5);
  gate_.Open();
  for (auto& call : running) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(state_->Stats(kGet).admitted, 4);
}

// Events: a throttle that starts rejecting says so once, however many calls
// it rejects, and once more when it admits a call after a quiet second.
TEST_P(ServerInterceptorsTest, ThrottleSaturationIsAnEventEachWay) {
  SimulatedClock clock;
  auto recorder = std::make_shared<testing::RecordingEvents>();
  Start(kGetConcurrency3, clock, recorder);
  std::vector<PendingCall*> running;
  for (int i = 0; i < 3; ++i) running.push_back(StartGet("gated"));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Get("gated").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  gate_.Open();
  for (auto& call : running) ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  clock.AdvanceTime(kThrottleQuietPeriod - absl::Milliseconds(1));
  EXPECT_TRUE(Get("fast").ok());  // admitted, but the last rejection is too recent
  state_->FlushEvents();
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(1));
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_TRUE(Get("fast").ok());
  state_->FlushEvents();
  EXPECT_THAT(recorder->lines(),
              ::testing::ElementsAre(
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
                  "saturated (concurrency)",
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
                  "admitting again (saturated for 0, 5 calls rejected)"));
}

// Under a steady overload a scope admits and rejects in turn; the operator
// hears of it twice (when it starts, and when it is over), not on every
// switch, and learns how long it lasted and what it cost. The limit is the
// service's (a {service} entry): its scope reads "cache.v1.CacheService/*".
TEST_P(ServerInterceptorsTest, ThrottleSaturationDoesNotFlapUnderSteadyOverload) {
  SimulatedClock clock;
  auto recorder = std::make_shared<testing::RecordingEvents>();
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
                              "throttle": {"ratePerSecond": 100, "burst": 1}}]})",
        clock, recorder);
  for (int i = 0; i < 50; ++i) {
    if (i > 0) clock.AdvanceTime(absl::Milliseconds(10));  // one token
    EXPECT_TRUE(Get("fast").ok()) << i;
    EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << i;
  }
  state_->FlushEvents();
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(500));
  EXPECT_TRUE(Get("fast").ok());
  state_->FlushEvents();
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(500));
  EXPECT_TRUE(Get("fast").ok());
  state_->FlushEvents();
  EXPECT_THAT(recorder->lines(),
              ::testing::ElementsAre(
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/*): "
                  "saturated (rate)",
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/*): "
                  "admitting again (saturated for 490ms, 50 calls rejected)"));
}

// A limit on Get never affects Store.
TEST_P(ServerInterceptorsTest, PerMethodScope) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                              "throttle": {"maxConcurrency": 1}}]})");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Store().ok());
  EXPECT_EQ(counters_.store_bodies.load(), 20);
  // No policy: never limited, but counted (metrics are on by default).
  EXPECT_EQ(state_->Stats(kStore).admitted, 20);
  EXPECT_EQ(state_->Stats(kStore).rejected_concurrency, 0);
  EXPECT_EQ(state_->Stats(kStore).CallsWithCode(0), 20u);
}

// A throttle configured for a whole service is one limit shared by its
// methods.
TEST_P(ServerInterceptorsTest, ServiceLevelLimitIsShared) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
                              "throttle": {"maxConcurrency": 1}}]})");
  auto running = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  grpc::Status store = Store();
  EXPECT_EQ(store.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(store.error_message(), HasSubstr("/cache.v1.CacheService/Store: concurrency limit 1"));
  gate_.Open();
  ASSERT_TRUE(running->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_TRUE(Store().ok());
}

// Client cancellations, client deadlines shorter than the handler, and
// thousands of mixed calls: in_flight returns to 0 every time.
TEST_P(ServerInterceptorsTest, NoSlotLeaksUnderCancellationsAndDeadlines) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                              "throttle": {"maxConcurrency": 4}}]})");
  // Deadlines that expire while the handler waits at the gate.
  ASSERT_NO_FATAL_FAILURE(HoldFourPastTheirDeadlines());
  // The handlers still hold their slots until they return.
  EXPECT_EQ(state_->Stats(kGet).in_flight, 4);
  EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));

  // Cancellations and a mixed storm from several threads.
  CancellationStorm(500);
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }))
      << state_->Stats(kGet).in_flight;
  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_GT(stats.admitted, 0);
  EXPECT_TRUE(Get("fast").ok());
}

// The same paths through an adaptive limit (pinned at 4 by minLimit =
// maxLimit): handlers outliving their client's deadline, cancellations and
// a mixed storm give every slot back to the limiter itself, not only to the
// method's in_flight counter: afterwards exactly 4 calls are admitted at
// once again, and its limit stays where it was.
TEST_P(ServerInterceptorsTest, NoAdaptiveSlotLeaksUnderCancellationsAndDeadlines) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                              "throttle": {"adaptive": {"minLimit": 4, "maxLimit": 4,
                                                        "initialLimit": 4}}}]})");
  // Deadlines that pass while the handlers are held: the slots stay taken
  // until the handlers return.
  ASSERT_NO_FATAL_FAILURE(HoldFourPastTheirDeadlines());
  EXPECT_EQ(state_->Stats(kGet).in_flight, 4);
  EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));

  CancellationStorm(300);
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_EQ(state_->Stats(kGet).concurrency_limit, 4);
  // Four held calls take every slot again; a fifth is refused; all come back.
  gate_.Close();
  std::vector<PendingCall*> held;
  for (int i = 0; i < 4; ++i) held.push_back(StartGet("gated"));
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 4; }));
  EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  gate_.Open();
  for (PendingCall* c : held) {
    ASSERT_TRUE(c->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(c->status.ok()) << c->status.error_message();
  }
  EXPECT_TRUE(Get("fast").ok());
}

// Server shutdown with calls in flight: every slot is released.
TEST_P(ServerInterceptorsTest, NoSlotLeaksOnShutdown) {
  Start(kGetConcurrency3);
  std::vector<PendingCall*> calls;
  for (int i = 0; i < 3; ++i) calls.push_back(StartGet("gated"));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  std::thread opener([&] {
    absl::SleepFor(absl::Milliseconds(100));
    gate_.Open();
  });
  server_->Shutdown(absl::Milliseconds(50));  // cancels what is still running
  opener.join();
  for (auto& c : calls) ASSERT_TRUE(c->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_EQ(state_->Stats(kGet).in_flight, 0);
  server_.reset();
}

// Rate limit on a simulated clock: admitted = burst, then rate x time.
TEST_P(ServerInterceptorsTest, RateLimit) {
  SimulatedClock clock;
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                              "throttle": {"ratePerSecond": 100, "burst": 5}}]})",
        clock);
  auto admitted_of = [&](int calls) {
    int ok = 0;
    for (int i = 0; i < calls; ++i) {
      grpc::ClientContext context;
      grpc::Status s = Get("fast", &context);
      if (s.ok()) {
        ++ok;
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
        EXPECT_EQ(s.error_message(), "/cache.v1.CacheService/Get: rate limit 100/s reached");
        EXPECT_EQ(context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms")->second,
                  "10");
      }
    }
    return ok;
  };
  EXPECT_EQ(admitted_of(20), 5);   // the burst
  clock.AdvanceTime(absl::Milliseconds(100));
  EXPECT_EQ(admitted_of(20), 5);   // 100/s x 0.1 s = 10, capped by the burst of 5
  clock.AdvanceTime(absl::Milliseconds(30));
  EXPECT_EQ(admitted_of(20), 3);   // 100/s x 0.03 s
  EXPECT_EQ(state_->Stats(kGet).rejected_rate, 60 - 13);
  EXPECT_EQ(counters_.get_bodies.load(), 13);
}

// Aborts: the observed fraction matches the configuration for a fixed seed
// (1000 calls, p = 0.3: the standard deviation is 0.0145, the bound is 4
// of them), with the configured code; aborted calls never run the handler.
constexpr char kGetAdaptive[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"adaptive": {"minLimit": 2, "baselineSamples": 2, "minSamples": 2}}}]})";

// Under an adaptive limit, a rejection is the same as under a fixed one:
// RESOURCE_EXHAUSTED naming the limit it hit, a pushback trailer, the
// handler never run. The limiter learns from the calls the interceptor
// releases: it starts pinned at minLimit to measure the baseline, and once
// two admitted calls have finished (10 ms each on the server's clock) it
// comes back to its initial limit, which Stats() reports.
TEST_P(ServerInterceptorsTest, AdaptiveConcurrencyLimitRejectsWithPushbackAndLearns) {
  SimulatedClock clock;
  Start(kGetAdaptive, clock);
  std::vector<PendingCall*> running;
  for (int i = 0; i < 2; ++i) running.push_back(StartGet("gated"));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  EXPECT_EQ(state_->Stats(kGet).concurrency_limit, 2);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    grpc::Status s = Get("gated", &context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(),
              "/cache.v1.CacheService/Get: adaptive concurrency limit 2 reached");
    auto pushback = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
    ASSERT_NE(pushback, context.GetServerTrailingMetadata().end());
    int64_t ms = 0;
    ASSERT_TRUE(absl::SimpleAtoi(
        absl::string_view(pushback->second.data(), pushback->second.size()), &ms));
    EXPECT_GE(ms, 10);     // the default minPushback
    EXPECT_LE(ms, 10000);  // the default maxPushback
  }
  EXPECT_EQ(counters_.get_bodies.load(), 2);
  EXPECT_EQ(state_->Stats(kGet).rejected_concurrency, 3);
  clock.AdvanceTime(absl::Milliseconds(10));
  gate_.Open();
  for (auto& call : running) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).concurrency_limit == 20; }));
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_TRUE(Get("fast").ok());
}

// The handler latency is measured on the server's clock (monotonic Now()):
// on a simulated clock, a call held while the clock moves 30 ms took exactly
// 30 ms, whether the throttle (Get) or fault injection (Store, no throttle)
// times it; real time passing does not count.
TEST_P(ServerInterceptorsTest, HandlerLatencyIsOnTheServersClock) {
  SimulatedClock clock;
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 3}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
     "faultInjection": {"delay": "0.02s", "delayFraction": 1.0}}]})",
        clock);
  PendingCall* held = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  clock.AdvanceTime(absl::Milliseconds(30));
  gate_.Open();
  ASSERT_TRUE(held->done.WaitForNotificationWithTimeout(kLong));
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).latency.count == 1; }));
  EXPECT_DOUBLE_EQ(state_->Stats(kGet).latency.sum_seconds, 0.030);
  // The Store is held 20 ms of real time (an injected delay, timed by
  // gRPC's alarm or the guard), but the server's clock does not move: 0.
  EXPECT_TRUE(Store().ok());
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kStore).latency.count == 1; }));
  EXPECT_DOUBLE_EQ(state_->Stats(kStore).latency.sum_seconds, 0.0);
}

constexpr char kGetAimd[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"adaptive": {"algorithm": "AIMD", "initialLimit": 10, "minSamples": 1,
                             "sampleWindow": "0.001s"}}}]})";

// A call whose handler finishes after the client's deadline is a drop for
// the limiter (the answer reaches nobody): AIMD backs off, 10 -> 9.
TEST_P(ServerInterceptorsTest, AnswerPastTheDeadlineIsADropForTheAdaptiveLimit) {
  SimulatedClock clock;
  Start(kGetAimd, clock);
  // The late call makes the limit (first window: until 1 ms); the window is
  // made over while the call is held in its handler, so the call's release
  // closes it whenever that comes (on the callback API gRPC may close the
  // call at its deadline, before the handler returns).
  PendingCall* late = StartGet("gated", absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 1; }));
  EXPECT_EQ(state_->Stats(kGet).concurrency_limit, 10);
  clock.AdvanceTime(absl::Seconds(1));
  ASSERT_TRUE(late->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_EQ(late->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's deadline is the client's plus the call's transit (it counts
  // the timeout from arrival): let that pass too before the handler answers.
  absl::SleepFor(absl::Milliseconds(200));
  gate_.Open();
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).concurrency_limit == 9; }))
      << "limit " << state_->Stats(kGet).concurrency_limit;
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, ServerInterceptorsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

// AddServerInterceptors() hands the policy file's warnings on, as
// CreateResilientChannel() does a client's; none for a file without any.
TEST(AddServerInterceptorsTest, GivesThePolicyFilesWarnings) {
  absl::StatusOr<PolicySet> warned = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
          "throttle": {"adaptive": {"algorithm": "AIMD", "tolerance": 0.1}}}]})");
  ASSERT_TRUE(warned.ok()) << warned.status();
  const std::vector<std::string> expected = warned->warnings();
  ASSERT_THAT(expected, ::testing::Contains(HasSubstr(
                            "throttle.adaptive: tolerance is not used by algorithm AIMD")));
  grpc::ServerBuilder builder;
  std::shared_ptr<ServerResilience> resilience =
      AddServerInterceptors(builder, *std::move(warned));
  EXPECT_EQ(resilience->warnings(), expected);

  absl::StatusOr<PolicySet> clean = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
          "throttle": {"maxConcurrency": 3}}]})");
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_TRUE(clean->warnings().empty());
  grpc::ServerBuilder other;
  EXPECT_TRUE(AddServerInterceptors(other, *std::move(clean))->warnings().empty());
}

// A setting only a client applies is no warning of a server: gRPC's built-in
// retry of streams (here Dump's, covered by a service entry) is the
// channel's, and so is a per-attempt timeout that is not retried. The loader
// still gives them, for the client.
TEST(AddServerInterceptorsTest, ClientOnlySettingsAreNotTheServersWarnings) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
          "retryPolicy": {"perAttemptTimeout": "0.5s"}, "throttle": {"maxConcurrency": 3}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  ASSERT_THAT(policies->warnings(),
              ::testing::Contains(HasSubstr(
                  "retryPolicy.perAttemptTimeout: not applied to the streams gRPC's built-in "
                  "retry retries (/cache.v1.CacheService/")));
  grpc::ServerBuilder builder;
  EXPECT_THAT(AddServerInterceptors(builder, *std::move(policies))->warnings(),
              ::testing::IsEmpty());
}

}  // namespace
}  // namespace resilience
