// Fault injection over real channels to an in-process server (sync and
// callback APIs), and its place behind the throttle; the fixture:
// server_interceptors_fixture.h. Also: nothing a client sends skips work,
// bad input is answered.

#include "src/server_interceptors/fault_stage.h"

#include <atomic>
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
// without the handler doing its work. The call must reach the server before
// its deadline: the channel is connected first (Store has no delay), and on a
// busy machine a call whose 50 ms pass before it is even sent is let go and
// tried again with twice the deadline (the server counts the deadline from
// the call's arrival, so every delayed call still expires in the 2 s delay).
TEST_P(ServerInterceptorsTest, ExpiredDuringDelaySkipsTheHandler) {
  Start(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
            "faultInjection": {"delay": "2s"}}]})");
  ASSERT_TRUE(Store().ok());
  for (absl::Duration deadline = absl::Milliseconds(50);; deadline *= 2) {
    auto call = StartGet("fast", deadline);
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_EQ(call->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    if (Eventually([&] { return state_->Stats(kGet).faults_delayed >= 1; }, absl::Seconds(1))) {
      break;
    }
    ASSERT_LT(deadline, absl::Milliseconds(800)) << "no call reached the server in time";
  }
  ASSERT_TRUE(Eventually([&] {
    const ServerMethodStats stats = state_->Stats(kGet);
    return stats.expired_while_delayed == stats.faults_delayed;
  }));
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

// Instantiated (sync and callback APIs) in server_interceptors_test.cc.

}  // namespace
}  // namespace resilience
