// The goodput experiment's gRPC mode: real channels with the client
// interceptors against a CacheServer that fails calls as the schedule says.
// A 30 s schedule (seed 11: an outage and a mixed failure in each) keeps
// the test at about 300k real calls.

#include "experiments/goodput/grpc_run.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "experiments/goodput/schedule_fault_interceptor.h"
#include "experiments/goodput/scheduled_faults.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"

namespace goodput {
namespace {

constexpr uint64_t kSeed = 11;
const absl::Duration kLength = absl::Seconds(30);

// The policies' keys from best to worst by `better`.
template <typename Better>
std::string Ranking(const std::vector<Policy>& policies, const std::vector<Metrics>& results,
                    Better better) {
  std::vector<size_t> order(policies.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return better(results[a], results[b]); });
  std::vector<std::string> keys;
  for (size_t i : order) keys.push_back(policies[i].key);
  return absl::StrJoin(keys, " > ");
}

class GoodputGrpcTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<Period> Schedule() const {
    return GetParam() == "outage" ? OutageSchedule(kLength, kSeed) : MixedSchedule(kLength, kSeed);
  }
};

// Both modes rank the policies the same way, by goodput and by waste; in
// fact the gRPC mode reproduces the simulated one call for call, because
// both run the same breakers on the schedule's time against the same
// backend.
TEST_P(GoodputGrpcTest, RanksThePoliciesLikeTheSimulatedMode) {
  const std::vector<Period> schedule = Schedule();
  ASSERT_GE(schedule.size(), 2u) << "the schedule must contain a failing period";
  const std::vector<Policy> policies = StandardPolicies();
  std::vector<Metrics> simulated;
  for (const Policy& p : policies) simulated.push_back(RunSimulated(schedule, kLength, p, kSeed));
  SetWasteRatios(simulated, 0);
  absl::StatusOr<std::vector<Metrics>> grpc = RunOverGrpc(schedule, kLength, policies, kSeed);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  SetWasteRatios(*grpc, 0);

  auto by_goodput = [](const Metrics& a, const Metrics& b) {
    return a.goodput_ratio > b.goodput_ratio;
  };
  auto by_waste = [](const Metrics& a, const Metrics& b) { return a.waste_ratio < b.waste_ratio; };
  EXPECT_EQ(Ranking(policies, *grpc, by_goodput), Ranking(policies, simulated, by_goodput));
  EXPECT_EQ(Ranking(policies, *grpc, by_waste), Ranking(policies, simulated, by_waste));

  for (size_t i = 0; i < policies.size(); ++i) {
    SCOPED_TRACE(policies[i].key);
    const Metrics& g = (*grpc)[i];
    const Metrics& s = simulated[i];
    EXPECT_EQ(g.offered, 30000);
    EXPECT_EQ(g.succeeded, s.succeeded);
    EXPECT_EQ(g.failed, s.failed);
    EXPECT_EQ(g.rejected_locally, s.rejected_locally);
    EXPECT_EQ(g.reached_failing_backend, s.reached_failing_backend);
    EXPECT_EQ(g.rejected_while_healthy, s.rejected_while_healthy);
    EXPECT_EQ(g.oracle_succeeded, s.oracle_succeeded);
    EXPECT_EQ(g.successes_per_second, s.successes_per_second);
  }
  // The schedule is informative: the breakers differ from each other.
  EXPECT_GT((*grpc)[0].reached_failing_backend, 0);
  EXPECT_NE(Ranking(policies, *grpc, by_waste), Ranking(policies, *grpc, by_goodput));
}

INSTANTIATE_TEST_SUITE_P(Schedules, GoodputGrpcTest, ::testing::Values("outage", "mixed"));

// The fault interceptor fails exactly the calls the schedule says, leaves
// calls without the experiment's metadata alone and refuses a bad tick.
TEST(ScheduleFaultInterceptorTest, FailsWhatTheScheduleSays) {
  Period healthy{Period::kHealthy, absl::ZeroDuration(), absl::Seconds(1)};
  Period down{Period::kDown, absl::Seconds(1), absl::Seconds(2)};
  const std::vector<Period> schedule = {healthy, down};
  ScheduledFaults faults(schedule, 1);
  auto server = StartScheduledServer(faults, cache_service::CacheServer::Options(), "k");
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  auto get = [&](const char* run, const char* tick) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (run != nullptr) context.AddMetadata(kRunMetadataKey, run);
    if (tick != nullptr) context.AddMetadata(kTickMetadataKey, tick);
    cache::v1::GetReq request;
    request.set_key("k");
    cache::v1::GetResp response;
    return stub->Get(&context, request, &response);
  };
  EXPECT_TRUE(get("a", "999").ok());
  grpc::Status down_status = get("a", "1000");
  EXPECT_EQ(down_status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(down_status.error_message(),
            "/cache.v1.CacheService/Get: scheduled failure at tick 1000");
  EXPECT_TRUE(get(nullptr, nullptr).ok());
  grpc::Status bad = get("a", "soon");
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad.error_message(),
            "/cache.v1.CacheService/Get: x-goodput-tick: not a tick (milliseconds >= 0): \"soon\"");
  const ScheduledFaults::Counts counts = faults.CountsOf("a");
  EXPECT_EQ(counts.served, 2);
  EXPECT_EQ(counts.served_failing, 1);
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(faults.CountsOf("b").served, 0);
}

}  // namespace
}  // namespace goodput
