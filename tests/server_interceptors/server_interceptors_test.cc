// Throttling and fault injection over real channels to an in-process server
// (sync and callback APIs), with a test service whose Get handler blocks on a
// gate so that calls stay in flight as long as a test needs.

#include "src/server_interceptors/server_interceptors.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/testing/recording_events.h"
#include "src/core/mutex.h"
#include "src/core/simulated_clock.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/test_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::GuardedServer;
using ::resilience::testing::StartGuardedServer;
using ::resilience::testing::TestServer;
using ::testing::HasSubstr;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr char kStore[] = "/cache.v1.CacheService/Store";

// Holds handlers until opened; counts the handler bodies that did real work.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  // Waits (at most 10 s, so a broken test cannot hang) until open.
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Counters {
  std::atomic<int> get_bodies{0};
  std::atomic<int> store_bodies{0};
  std::atomic<int> get_waiting{0};
};

// Sync API: Get waits at the gate (when `gated`), Store answers at once.
class SyncService final : public cache::v1::CacheService::Service {
 public:
  SyncService(Gate* gate, Counters* counters) : gate_(gate), counters_(counters) {}
  grpc::Status Get(grpc::ServerContext*, const cache::v1::GetReq* request,
                   cache::v1::GetResp* response) override {
    counters_->get_bodies++;
    if (request->key() == "gated") {
      counters_->get_waiting++;
      gate_->Pass();
      counters_->get_waiting--;
    }
    response->set_value("v");
    return grpc::Status::OK;
  }
  grpc::Status Store(grpc::ServerContext*, const cache::v1::StoreReq*,
                     cache::v1::StoreResp*) override {
    counters_->store_bodies++;
    return grpc::Status::OK;
  }

 private:
  Gate* const gate_;
  Counters* const counters_;
};

// Callback API: the same behaviour; a gated Get finishes from another thread.
class CallbackService final : public cache::v1::CacheService::CallbackService {
 public:
  CallbackService(Gate* gate, Counters* counters) : gate_(gate), counters_(counters) {}
  ~CallbackService() override {
    for (std::thread& t : threads_) t.join();
  }
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const cache::v1::GetReq* request,
                                cache::v1::GetResp* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    counters_->get_bodies++;
    if (request->key() != "gated") {
      response->set_value("v");
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    counters_->get_waiting++;
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([this, reactor, response] {
      gate_->Pass();
      counters_->get_waiting--;
      response->set_value("v");
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* Store(grpc::CallbackServerContext* context,
                                  const cache::v1::StoreReq*, cache::v1::StoreResp*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    counters_->store_bodies++;
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  Gate* const gate_;
  Counters* const counters_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

absl::Duration kLong = absl::Seconds(10);

class ServerInterceptorsTest : public ::testing::TestWithParam<bool> {
 protected:
  // Starts the server (sync or callback API per the test parameter) with
  // `policy_json` and `clock`.
  void Start(const std::string& policy_json, Clock& clock = Clock::Real(),
             std::shared_ptr<ResilienceEvents> events = nullptr) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    grpc::Service* service;
    if (GetParam()) {
      callback_service_ = std::make_unique<CallbackService>(&gate_, &counters_);
      service = callback_service_.get();
    } else {
      sync_service_ = std::make_unique<SyncService>(&gate_, &counters_);
      service = sync_service_.get();
    }
    // The handlers above never check for rejection: the guard keeps
    // rejected calls away from them.
    ServerResilienceOptions options;
    options.clock = &clock;
    options.events = std::move(events);
    GuardedServer started = StartGuardedServer<cache::v1::CacheService>(
        *std::move(policies), service, std::move(options));
    state_ = started.resilience;
    server_ = std::move(started.server);
    ASSERT_NE(server_, nullptr);
    channel_ = server_->NewChannel();
    stub_ = cache::v1::CacheService::NewStub(channel_);
  }

  // Every call a test started finishes before its ClientContext goes.
  void TearDown() override {
    gate_.Open();
    for (auto& call : pending_) EXPECT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  // A Get in the background; `done` is notified with its status.
  struct PendingCall {
    grpc::ClientContext context;
    cache::v1::GetReq request;
    cache::v1::GetResp response;
    grpc::Status status;
    absl::Notification done;
  };
  // The fixture owns the call, so that it outlives the RPC.
  PendingCall* StartGet(const std::string& key, absl::Duration deadline = kLong) {
    MutexLock lock(&pending_mu_);
    pending_.push_back(std::make_unique<PendingCall>());
    PendingCall* call = pending_.back().get();
    call->request.set_key(key);
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    stub_->async()->Get(&call->context, &call->request, &call->response,
                        [call](grpc::Status s) {
                          call->status = std::move(s);
                          call->done.Notify();
                        });
    return call;
  }

  // Four threads each start `calls` Gets and wait for each to end: every
  // third held at the gate (open it first), every fifth with a 1 ms
  // deadline, every seventh (shifted per thread) cancelled by the client.
  void CancellationStorm(int calls) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < calls; ++i) {
          auto call = StartGet(i % 3 == 0 ? "gated" : "fast",
                               i % 5 == 0 ? absl::Milliseconds(1) : kLong);
          if ((i + t) % 7 == 0) call->context.TryCancel();
          ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }

  grpc::Status Get(const std::string& key, grpc::ClientContext* context = nullptr) {
    grpc::ClientContext local;
    if (context == nullptr) context = &local;
    context->set_deadline(absl::ToChronoTime(absl::Now() + kLong));
    cache::v1::GetReq request;
    request.set_key(key);
    cache::v1::GetResp response;
    return stub_->Get(context, request, &response);
  }

  grpc::Status Store() {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
    cache::v1::StoreReq request;
    request.set_key("k");
    cache::v1::StoreResp response;
    return stub_->Store(&context, request, &response);
  }

  Gate gate_;
  Counters counters_;
  std::unique_ptr<SyncService> sync_service_;
  std::unique_ptr<CallbackService> callback_service_;
  std::shared_ptr<ServerResilience> state_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
  Mutex pending_mu_;
  std::vector<std::unique_ptr<PendingCall>> pending_;
};

constexpr char kGetConcurrency3[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 3}}]})";

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
    grpc::Status s = Get("gated", &context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(), "/cache.v1.CacheService/Get: concurrency limit 3 reached");
    auto pushback = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
    ASSERT_NE(pushback, context.GetServerTrailingMetadata().end());
    int64_t ms = 0;
    ASSERT_TRUE(absl::SimpleAtoi(
        absl::string_view(pushback->second.data(), pushback->second.size()), &ms));
    EXPECT_GE(ms, absl::ToInt64Milliseconds(absl::Now() - first_started) - 5);
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
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(1));
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_THAT(recorder->lines(),
              ::testing::ElementsAre(
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
                  "saturated (concurrency)",
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
                  "admitting again (saturated for 0, 5 calls rejected)"));
}

// Under a steady overload a scope admits and rejects in turn; the operator
// hears of it twice (when it starts, and when it is over), not on every
// switch, and learns how long it lasted and what it cost.
TEST_P(ServerInterceptorsTest, ThrottleSaturationDoesNotFlapUnderSteadyOverload) {
  SimulatedClock clock;
  auto recorder = std::make_shared<testing::RecordingEvents>();
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                              "throttle": {"ratePerSecond": 100, "burst": 1}}]})",
        clock, recorder);
  for (int i = 0; i < 50; ++i) {
    if (i > 0) clock.AdvanceTime(absl::Milliseconds(10));  // one token
    EXPECT_TRUE(Get("fast").ok()) << i;
    EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << i;
  }
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(500));
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_EQ(recorder->lines().size(), 1u);
  clock.AdvanceTime(absl::Milliseconds(500));
  EXPECT_TRUE(Get("fast").ok());
  EXPECT_THAT(recorder->lines(),
              ::testing::ElementsAre(
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
                  "saturated (rate)",
                  "throttle /cache.v1.CacheService/Get (scope cache.v1.CacheService/Get): "
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
  std::vector<PendingCall*> calls;
  for (int i = 0; i < 4; ++i) calls.push_back(StartGet("gated", absl::Milliseconds(50)));
  for (auto& c : calls) {
    ASSERT_TRUE(c->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_EQ(c->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
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
  // Four held calls take every slot; a fifth is refused; all come back.
  const auto exactly_four_fit = [&](absl::Duration deadline) {
    gate_.Close();
    std::vector<PendingCall*> held;
    for (int i = 0; i < 4; ++i) held.push_back(StartGet("gated", deadline));
    EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 4; }));
    EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    return held;
  };
  // Deadlines that pass while the handlers are held: the slots stay taken
  // until the handlers return.
  for (PendingCall* c : exactly_four_fit(absl::Milliseconds(50))) {
    ASSERT_TRUE(c->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_EQ(c->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  EXPECT_EQ(Get("x").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));

  CancellationStorm(300);
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_EQ(state_->Stats(kGet).concurrency_limit, 4);
  std::vector<PendingCall*> held = exactly_four_fit(kLong);
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
TEST_P(ServerInterceptorsTest, FaultInjectionAborts) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
            "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 0.3, "seed": 7}}]})");
  int aborted = 0;
  for (int i = 0; i < 1000; ++i) {
    grpc::Status s = Get("fast");
    if (!s.ok()) {
      ++aborted;
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
      EXPECT_EQ(s.error_message(), "/cache.v1.CacheService/Get: fault injected (UNAVAILABLE)");
    }
  }
  EXPECT_NEAR(aborted / 1000.0, 0.3, 4 * 0.0145);
  EXPECT_EQ(state_->Stats(kGet).faults_aborted, aborted);
  EXPECT_EQ(counters_.get_bodies.load(), 1000 - aborted);
}

// Delays: the delayed fraction matches the configuration, and every delayed
// call took at least the delay.
TEST_P(ServerInterceptorsTest, FaultInjectionDelays) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
            "faultInjection": {"delay": "0.03s", "delayFraction": 0.5, "seed": 3}}]})");
  // Concurrent calls, so that the delays overlap and the test stays short.
  constexpr int kCalls = 200;
  std::vector<PendingCall*> calls;
  std::vector<absl::Time> starts;
  for (int i = 0; i < kCalls; ++i) {
    starts.push_back(absl::Now());
    calls.push_back(StartGet("fast"));
  }
  int slow = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(calls[i]->status.ok());
  }
  const int64_t delayed = state_->Stats(kGet).faults_delayed;
  // p = 0.5 over 200 draws: sd 0.035; bound 4 sd.
  EXPECT_NEAR(delayed / static_cast<double>(kCalls), 0.5, 4 * 0.035);
  (void)slow;
  (void)starts;
  EXPECT_EQ(counters_.get_bodies.load(), kCalls);
}

// Throttle first, then fault injection: a delayed call holds the slot it was
// granted (a slow handler), and a rejected call is never delayed.
TEST_P(ServerInterceptorsTest, ThrottleDecidesBeforeFaultInjection) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
            "throttle": {"maxConcurrency": 1},
            "faultInjection": {"delay": "0.5s"}}]})");
  auto first = StartGet("fast");
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).faults_delayed == 1; }));
  const absl::Time start = absl::Now();
  grpc::Status second = Get("fast");
  const absl::Duration rejection_time = absl::Now() - start;
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_LT(rejection_time, absl::Milliseconds(250));  // not delayed
  EXPECT_EQ(state_->Stats(kGet).faults_delayed, 1);
  ASSERT_TRUE(first->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_TRUE(first->status.ok());
}

// A delayed call whose client deadline passes during the delay is answered
// without the handler doing its work.
TEST_P(ServerInterceptorsTest, ExpiredDuringDelaySkipsTheHandler) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
            "faultInjection": {"delay": "0.3s"}}]})");
  auto call = StartGet("fast", absl::Milliseconds(50));
  ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_EQ(call->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).expired_while_delayed == 1; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(counters_.get_bodies.load(), 0);
}

// Nothing a client sends can switch work off: the metadata keys this
// library uses anywhere (and the old rejection marker) change nothing, on a
// throttled method and on one without any policy.
TEST_P(ServerInterceptorsTest, ClientMetadataCannotSkipWork) {
  Start(kGetConcurrency3);
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"x-resilience-rejected", "throttled"}, {"x-resilience-rejected", "fault"},
      {"x-resilience-local-rejection", "1"},  {"grpc-retry-pushback-ms", "1000"},
      {"grpc-previous-rpc-attempts", "3"},    {"x-retry-attempt", "3"}};
  for (const auto& [key, value] : keys) {
    grpc::ClientContext get_context;
    get_context.AddMetadata(key, value);
    EXPECT_TRUE(Get("fast", &get_context).ok()) << key;
    grpc::ClientContext store_context;
    store_context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
    store_context.AddMetadata(key, value);
    cache::v1::StoreReq request;
    request.set_key("k");
    cache::v1::StoreResp response;
    EXPECT_TRUE(stub_->Store(&store_context, request, &response).ok()) << key;
  }
  EXPECT_EQ(counters_.get_bodies.load(), static_cast<int>(keys.size()));
  EXPECT_EQ(counters_.store_bodies.load(), static_cast<int>(keys.size()));
}

// Bad input: malformed request bytes, an unknown method, oversized metadata;
// the server answers with the proper error, keeps serving, leaks no slot.
TEST_P(ServerInterceptorsTest, BadInputIsAnsweredAndServingGoesOn) {
  Start(R"({"methodConfig": [{"name": [{}], "throttle": {"maxConcurrency": 8}}]})");
  grpc::GenericStub generic(channel_);
  auto raw_call = [&](const std::string& method, const std::string& bytes) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kLong));
    return status;
  };
  grpc::Status malformed = raw_call(kGet, std::string("\xff\xff\xff\xff\x0f", 5));
  // gRPC 1.51 answers INTERNAL on the sync API and UNIMPLEMENTED on the
  // callback API for a request it cannot parse.
  EXPECT_THAT(malformed.error_code(), ::testing::AnyOf(grpc::StatusCode::INTERNAL,
                                                       grpc::StatusCode::UNIMPLEMENTED))
      << malformed.error_message();
  grpc::Status unknown = raw_call("/cache.v1.CacheService/Nope", "");
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  grpc::ClientContext big;
  big.AddMetadata("x-big", std::string(64 * 1024, 'a'));
  grpc::Status too_big = Get("fast", &big);
  EXPECT_FALSE(too_big.ok());
  // Oversized metadata makes the server drop that connection (an HTTP/2
  // protocol error); the server itself goes on serving new ones. (A local
  // subchannel pool, so that the new channel does not share the old
  // connection.)
  grpc::ChannelArguments fresh;
  fresh.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  stub_ = cache::v1::CacheService::NewStub(server_->NewChannel({}, fresh));
  grpc::Status after = Get("fast");
  EXPECT_TRUE(after.ok()) << after.error_code() << ": " << after.error_message();
  EXPECT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
}

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

}  // namespace
}  // namespace resilience
