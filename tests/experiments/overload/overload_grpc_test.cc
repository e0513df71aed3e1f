// The overload experiment's gRPC mode, shortened (about 7 s): real servers
// and channels, a backend losing half its workers under twice its capacity.
// Without a limit the queue eats the deadlines; the adaptive limit keeps
// most of the backend's capacity as goodput and turns the rest away. And a
// load generator that stalls is reported, its backlog not sent in a burst.
// Bounds are loose: this runs in real time on a shared machine.

#include "experiments/overload/grpc_run.h"

#include <string>

#include "gtest/gtest.h"

namespace overload {
namespace {

TEST(OverloadGrpcTest, AdaptiveKeepsGoodputWhereNoLimitLosesIt) {
  Config config = GrpcDefaults();
  config.loads = {2};
  config.capacities = {1, 0.5};
  config.phase_length = absl::Seconds(1.5);
#ifdef RESILIENCE_SANITIZED
  // Each call costs several times the CPU under a sanitizer: half the rate,
  // the same load relative to capacity (tests/CMakeLists.txt).
  config.service_time *= 2;
  config.deadline *= 2;
#endif
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

// A load generator that stalls (here it pauses 0.5 s, as in a process the
// machine gave no CPU) neither sends its overdue arrivals in one burst nor
// passes the stall on: they are counted as unsent in their phase, the next
// phase runs as usual, and the run is made again and said so (three times
// at most: this pause comes back in every attempt).
TEST(OverloadGrpcTest, AStalledLoadGeneratorIsReportedNotPassedOn) {
  Config config = GrpcDefaults();
  config.loads = {2};
  config.capacities = {1, 1};
  config.phase_length = absl::Seconds(1);
  config.pause_at = absl::Milliseconds(300);
  config.pause_for = absl::Milliseconds(500);
  absl::StatusOr<Result> result = RunGrpc(config, {{"adaptive", R"({"adaptive": {}})"}});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->phases.size(), 2u);
  const PhaseResult& stalled = result->phases[0];
  const PhaseResult& after = result->phases[1];
  // About 0.44 s of arrivals at 800/s: those more than a deadline late.
  EXPECT_GT(stalled.unsent, 200);
  EXPECT_LT(stalled.unsent, stalled.offered);
  EXPECT_LE(after.unsent * 100, after.offered);
  const double capacity = config.workers / absl::ToDoubleSeconds(config.service_time);
  EXPECT_GT(after.goodput_per_second, 0.5 * capacity);
  ASSERT_EQ(result->notes.size(), 3u);
  EXPECT_NE(result->notes[0].find("adaptive: run 1 discarded (phase 0: "), std::string::npos)
      << result->notes[0];
  EXPECT_NE(result->notes[2].find("kept a run with a stall"), std::string::npos)
      << result->notes[2];
  EXPECT_NE(ToTable(*result).find("arrivals not sent"), std::string::npos);
  EXPECT_NE(ToJson(*result).find("\"unsent\": "), std::string::npos);
}

}  // namespace
}  // namespace overload
