// throttle.loadReport over real channels (sync and callback APIs): each
// unary answer of a throttled method to a call that asks (resilience-orca),
// served or rejected (on the callback API
// rejected on arrival, answered by the guard), carries the scope's load (an
// ORCA report in orca-load-bin: gRPC 1.51's client core keeps ORCA's
// own endpoint-load-metrics-bin from the application); a client reads it and
// sees the concurrency in use rise as calls are held in the handler. Off
// with loadReport: false; never on a method without a throttle.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/grpc_common/reported_load.h"
#include "src/routing/load_report.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"

namespace resilience::testing {
namespace {

// A Get of "fast": its status, and its load report (nullopt: no trailer).
struct Answered {
  grpc::Status status;
  std::optional<LoadReport> report;
  std::optional<double> utilization;  // ReportedUtilization() of the trailers
};

// `ask`: the call asks for the report, as our client's routed attempts do.
Answered GetReport(cache::v1::CacheService::Stub& stub, bool ask = true) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
  if (ask) context.AddMetadata("resilience-orca", "1");
  cache::v1::GetReq request;
  request.set_key("fast");
  cache::v1::GetResp response;
  Answered answered;
  answered.status = stub.Get(&context, request, &response);
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find("orca-load-bin");
  if (found != trailers.end()) {
    absl::StatusOr<LoadReport> report =
        ParseLoadReport(absl::string_view(found->second.data(), found->second.size()));
    EXPECT_TRUE(report.ok()) << report.status();
    if (report.ok()) answered.report = *std::move(report);
  }
  answered.utilization = ReportedUtilization(trailers);
  return answered;
}

double Concurrency(const Answered& answered) {
  if (!answered.report.has_value()) return -1;
  const auto it = answered.report->utilization.find("concurrency");
  return it == answered.report->utilization.end() ? -1 : it->second;
}

TEST_P(ServerInterceptorsTest, LoadReportShowsTheConcurrencyInUseRising) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 4}}]})");
  Answered idle = GetReport(*stub_);
  ASSERT_TRUE(idle.status.ok()) << idle.status.error_message();
  ASSERT_TRUE(idle.report.has_value()) << "a throttled method reports by default";
  EXPECT_EQ(Concurrency(idle), 0) << "its own slot given back before the report";
  EXPECT_EQ(idle.utilization, 0.0);
  EXPECT_EQ(idle.report->eps, 0);
  EXPECT_EQ(idle.report->cpu_utilization, 0) << "no CPU gate: no CPU figure";

  for (int held = 1; held <= 3; ++held) {
    StartGet("gated");
    ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == held; }));
    Answered busy = GetReport(*stub_);
    ASSERT_TRUE(busy.status.ok()) << busy.status.error_message();
    EXPECT_DOUBLE_EQ(Concurrency(busy), held / 4.0) << held << " held";
    EXPECT_DOUBLE_EQ(busy.report->application_utilization, held / 4.0);
    ASSERT_TRUE(busy.utilization.has_value());
    EXPECT_DOUBLE_EQ(*busy.utilization, held / 4.0);
  }

  // Full: the rejected answer reports too, with its own rejection counted.
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 4; }));
  Answered rejected = GetReport(*stub_);
  EXPECT_EQ(rejected.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(rejected.report.has_value()) << "a rejection carries the report";
  EXPECT_DOUBLE_EQ(Concurrency(rejected), 1.0);
  EXPECT_GE(rejected.report->eps, 1) << "the rejection rate counts this rejection";
  EXPECT_EQ(rejected.utilization, 1.0);
  EXPECT_EQ(counters_.get_bodies.load(), 8) << "the rejected call never ran";
}

TEST_P(ServerInterceptorsTest, LoadReportOffWhenFalseAndAbsentWithoutAThrottle) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 1, "loadReport": false}}]})");
  Answered served = GetReport(*stub_);
  ASSERT_TRUE(served.status.ok());
  EXPECT_FALSE(served.report.has_value());
  EXPECT_EQ(served.utilization, std::nullopt);
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  Answered rejected = GetReport(*stub_);
  EXPECT_EQ(rejected.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_FALSE(rejected.report.has_value());

  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
  context.AddMetadata("resilience-orca", "1");
  cache::v1::StoreReq request;
  cache::v1::StoreResp response;
  ASSERT_TRUE(stub_->Store(&context, request, &response).ok());
  EXPECT_EQ(context.GetServerTrailingMetadata().count("orca-load-bin"), 0u)
      << "Store has no throttle";
}

// A caller that does not ask (any client but our routed attempts) gets no
// report, served or rejected, on or off arrival: it would not read it, and
// the trailer is most of what a non-binding throttle costs the server.
TEST_P(ServerInterceptorsTest, LoadReportOnlyForCallsThatAskForIt) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 1}}]})");
  Answered served = GetReport(*stub_, /*ask=*/false);
  ASSERT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_FALSE(served.report.has_value());
  EXPECT_TRUE(GetReport(*stub_).report.has_value()) << "the next call asks";
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  Answered rejected = GetReport(*stub_, /*ask=*/false);
  EXPECT_EQ(rejected.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_FALSE(rejected.report.has_value());
  Answered asked = GetReport(*stub_);
  EXPECT_EQ(asked.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(asked.report.has_value());
}

}  // namespace
}  // namespace resilience::testing
