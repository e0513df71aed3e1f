// Deadline-aware admission (throttle.deadlineAdmission) over real channels,
// sync and callback APIs: once the method has its minimum of service times,
// a call whose remaining deadline at arrival is below their percentile is
// answered DEADLINE_EXCEEDED with the "do not retry" pushback and never
// reaches the handler; at most maxShare of the arrivals are refused; the
// refusals are counted with their own cause. Service times are the
// handlers' run times on a simulated clock (advanced while handlers are
// held at the gate), so the percentile is fixed by the test; deadlines are
// real (gRPC's), seconds apart from it.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/status_report.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;

// A Get of "fast" with `deadline`; `*pushback` gets the answer's
// grpc-retry-pushback-ms, if any.
grpc::Status GetWithin(cache::v1::CacheService::Stub& stub, absl::Duration deadline,
                       std::string* pushback) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  cache::v1::GetReq request;
  request.set_key("fast");
  cache::v1::GetResp response;
  grpc::Status status = stub.Get(&context, request, &response);
  const auto found = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
  if (found != context.GetServerTrailingMetadata().end()) {
    *pushback = std::string(found->second.data(), found->second.size());
  }
  return status;
}

TEST_P(ServerInterceptorsTest, DeadlineAdmissionRefusesCallsThatCannotFinishInTime) {
  SimulatedClock clock;
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"deadlineAdmission": {"percentile": 0.9, "maxShare": 0.5, "minSamples": 4}}}]})",
        clock);
  const absl::Duration kShort = absl::Seconds(2);
  const absl::Duration kAmple = absl::Seconds(30);
  std::string pushback;
  // Too few service times yet: a short deadline is served.
  EXPECT_TRUE(GetWithin(*stub_, kShort, &pushback).ok());
  // Three calls whose handlers take 5 s on the server's clock.
  gate_.Close();
  std::vector<PendingCall*> slow;
  for (int i = 0; i < 3; ++i) slow.push_back(StartGet("gated", kAmple));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 3; }));
  clock.AdvanceTime(absl::Seconds(5));
  gate_.Open();
  for (PendingCall* call : slow) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  // Service times 0, 5 s, 5 s, 5 s: p90 is 5 s (reported as its bucket's
  // upper bound, 5.5 s). 2 s left is not enough; 30 s is.
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  EXPECT_TRUE(GetWithin(*stub_, kAmple, &pushback).ok());
  const int served = counters_.get_bodies.load();
  EXPECT_EQ(served, 5);

  // Five arrivals so far: with maxShare 0.5, refusals k while k <= (5 + k) / 2.
  int refused = 0;
  grpc::Status status;
  for (int i = 0; i < 10; ++i) {
    pushback.clear();
    status = GetWithin(*stub_, kShort, &pushback);
    if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) break;
    ++refused;
    EXPECT_THAT(status.error_message(),
                HasSubstr("/cache.v1.CacheService/Get: remaining deadline "));
    EXPECT_THAT(status.error_message(),
                HasSubstr(" is below the p90 service time 5.5"));
    EXPECT_EQ(pushback, "-1") << "a retry would have even less time";
    EXPECT_EQ(counters_.get_bodies.load(), served) << "a refused call never reaches the handler";
  }
  EXPECT_EQ(refused, 5);
  EXPECT_TRUE(status.ok()) << "over the share: admitted, " << status.error_message();
  EXPECT_EQ(counters_.get_bodies.load(), served + 1);

  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_deadline, 5);
  EXPECT_EQ(stats.rejected_concurrency + stats.rejected_rate + stats.rejected_cpu, 0);
  EXPECT_EQ(stats.CallsWithCode(static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED)), 5u);
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(), HasSubstr("grpc_resilience_server_rejections_total{grpc_method=\""
                                       "/cache.v1.CacheService/Get\",cause=\"deadline\"} 5"));
  // The status page's row counts them among the throttle's rejections.
  StatusReport report;
  state_->AppendStatus(report);
  ASSERT_EQ(report.server_methods.size(), 1u);
  EXPECT_EQ(report.server_methods[0].rejected, 5);
}

// Four samples make the p100 of the method's service times.
constexpr char kLearnAtP100[] = R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"deadlineAdmission": {"percentile": 1, "maxShare": 1, "minSamples": 4}}}]})";

// After four handlers that took 5 s: a Get with 2 s left is refused before
// its handler runs.
void ExpectShortGetRefusedAtP100(cache::v1::CacheService::Stub& stub, const Counters& counters) {
  const int served = counters.get_bodies.load();
  std::string pushback;
  const grpc::Status status = GetWithin(stub, absl::Seconds(2), &pushback);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(" is below the p100 service time 5.5"));
  EXPECT_EQ(counters.get_bodies.load(), served);
}

// A method so slow that its calls end past their deadline still has
// service times: the handler ran that long. (Counting only calls answered
// in time left a saturated method without samples, and nothing refused.)
// The p100: a round of HoldFourPastTheirDeadlines() let go on a busy
// machine adds service times of 0 on the simulated clock.
TEST_P(ServerInterceptorsTest, DeadlineAdmissionLearnsFromCallsAnsweredLate) {
  SimulatedClock clock;
  Start(kLearnAtP100, clock);
  HoldFourPastTheirDeadlines();
  clock.AdvanceTime(absl::Seconds(5));
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return state_->Stats(kGet).in_flight == 0; }));
  ExpectShortGetRefusedAtP100(*stub_, counters_);
  EXPECT_EQ(state_->Stats(kGet).rejected_deadline, 1);
}

// A call its client cancelled while the handler ran still took that long:
// the handler answered at its end. (The calls a client leaves at its own
// deadline are cancelled on the server when their RST_STREAM arrives
// before the server's copy of the deadline passes: counting only expired
// ones lost their service times now and then.)
TEST_P(ServerInterceptorsTest, DeadlineAdmissionLearnsFromCallsItsClientsCancelled) {
  SimulatedClock clock;
  Start(kLearnAtP100, clock);
  gate_.Close();
  std::vector<PendingCall*> calls;
  for (int i = 0; i < 4; ++i) calls.push_back(StartGet("gated"));
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 4; }));
  for (PendingCall* call : calls) call->context.TryCancel();
  for (PendingCall* call : calls) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_EQ(call->status.error_code(), grpc::StatusCode::CANCELLED);
  }
  clock.AdvanceTime(absl::Seconds(5));
  gate_.Open();
  ASSERT_TRUE(Eventually([&] {
    return counters_.get_waiting.load() == 0 && state_->Stats(kGet).in_flight == 0;
  }));
  ExpectShortGetRefusedAtP100(*stub_, counters_);
}

}  // namespace
}  // namespace resilience::testing
