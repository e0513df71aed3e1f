// The overload experiment's gRPC mode, shortened (about 7 s): real servers
// and channels, a backend losing half its workers under twice its capacity.
// Without a limit the queue eats the deadlines; the adaptive limit keeps
// most of the backend's capacity as goodput and turns the rest away.
// Bounds are loose: this runs in real time on a shared machine.

#include "experiments/overload/grpc_run.h"

#include "gtest/gtest.h"

namespace overload {
namespace {

TEST(OverloadGrpcTest, AdaptiveKeepsGoodputWhereNoLimitLosesIt) {
  Config config = GrpcDefaults();
  config.loads = {2};
  config.capacities = {1, 0.5};
  config.phase_length = absl::Seconds(1.5);
  absl::StatusOr<Result> result =
      RunGrpc(config, {{"adaptive", R"({"adaptive": {}})"}, {"none", ""}});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->phases.size(), 4u);
  EXPECT_GT(result->unloaded_p99_ms, 0);
  const PhaseResult& adaptive = result->phases[2];  // phase 1, adaptive
  const PhaseResult& none = result->phases[3];      // phase 1, none
  ASSERT_EQ(none.policy, "none");
  ASSERT_EQ(adaptive.policy, "adaptive");
  const double capacity = 0.5 * config.workers / absl::ToDoubleSeconds(config.service_time);
  EXPECT_GT(adaptive.goodput_per_second, 0.5 * capacity);
  EXPECT_GT(adaptive.goodput_per_second, 2 * none.goodput_per_second);
  EXPECT_GT(adaptive.rejected, 0);
  EXPECT_EQ(none.rejected, 0);
  EXPECT_GT(adaptive.mean_limit, 0);
}

}  // namespace
}  // namespace overload
