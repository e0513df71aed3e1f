// The fleet simulator's check against real gRPC (fleet_grpc_run.h,
// fleet_real): a short real run at a low load works and is measured as the
// simulator measures, and the fleet_real tool produces its comparison. No
// assertion here depends on how fast this machine is: the figures the
// comparison reports are in docs/fleet.md, with the load average they were
// measured at.

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "experiments/fleet/fleet_grpc_run.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace fleet {
namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::RunCommand;

// 6 clients, 3 servers of 2 workers x 20 ms (C = 300 calls/s), a fifth of
// it offered: the servers keep up even on a loaded machine. 17 s.
Config Short() {
  Config c;
  c.clients = 6;
  c.servers = 3;
  c.workers = 2;
  c.service_time = absl::Milliseconds(20);
  c.load = 0.2;
  c.warmup = absl::Seconds(5);
  c.trigger = Trigger{TriggerKind::kCapacityHalf, absl::Seconds(2)};
  c.after = absl::Seconds(10);
  return c;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(FleetGrpcTest, RefusesWhatItCannotRunOverGrpc) {
  absl::StatusOr<FleetPolicy> recommended = StandardPolicy("recommended");
  ASSERT_TRUE(recommended.ok()) << recommended.status();
  Config outage = Short();
  outage.trigger.kind = TriggerKind::kOutage;
  absl::StatusOr<GrpcRun> r = RunOverGrpc(outage, *recommended);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "outage")) << r.status();
  // naive's budget was removed after loading: no real channel runs that.
  absl::StatusOr<FleetPolicy> naive = StandardPolicy("naive");
  ASSERT_TRUE(naive.ok()) << naive.status();
  r = RunOverGrpc(Short(), *naive);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "naive")) << r.status();
}

TEST(FleetGrpcTest, ARealRunIsMeasuredAsTheSimulatorMeasures) {
  absl::StatusOr<FleetPolicy> recommended = StandardPolicy("recommended");
  ASSERT_TRUE(recommended.ok()) << recommended.status();
  const Config c = Short();
  absl::StatusOr<GrpcRun> run = RunOverGrpc(c, *recommended);
  ASSERT_TRUE(run.ok()) << run.status();
  const RunResult& r = run->result;
  EXPECT_EQ(r.policy, "recommended");
  ASSERT_EQ(r.bins.size(), 34u);  // 17 s of 0.5 s bins
  int64_t offered = 0, succeeded = 0, attempts = 0;
  for (size_t i = 0; i < r.bins.size(); ++i) {
    EXPECT_GT(r.bins[i].offered, 0) << "bin " << i;  // 30 expected per bin
    EXPECT_LE(r.bins[i].succeeded, r.bins[i].offered) << "bin " << i;
    offered += r.bins[i].offered;
    succeeded += r.bins[i].succeeded;
    attempts += r.bins[i].attempts;
  }
  // Each success took an attempt that was sent; no call sends more than
  // its 3 attempts.
  EXPECT_GE(attempts, succeeded);
  EXPECT_LE(attempts, 3 * offered);
  // At a fifth of capacity (two fifths while halved) with a 2 s timeout,
  // nearly every call succeeds however slow the machine.
  EXPECT_GT(succeeded, offered * 8 / 10) << succeeded << " of " << offered;
  EXPECT_GT(r.baseline, 0.8);
  EXPECT_GT(r.window_amplification, 0.0);
}

TEST(FleetGrpcTest, TheToolWritesTheComparison) {
  const std::string dir = ::testing::TempDir();
  const CommandResult out = RunCommand(
      {FLEET_REAL_PATH, "--clients=6", "--servers=3", "--workers=2", "--service_ms=20",
       "--load=0.2", "--warmup_s=5", "--after_s=10", "--sim_seeds=1",
       "--policies=recommended", absl::StrCat("--out_dir=", dir)},
      "", absl::Seconds(120));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_TRUE(absl::StrContains(out.out, "Comparison")) << out.out;
  EXPECT_TRUE(absl::StrContains(out.out, "recommended/sim1")) << out.out;
  EXPECT_TRUE(absl::StrContains(out.out, "recommended/grpc1")) << out.out;
  EXPECT_TRUE(absl::StrContains(out.out, "load average before")) << out.out;
  EXPECT_EQ(ReadFile(dir + "/fleet_real.txt"), out.out);
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/fleet_real.json"), "recommended/grpc1"));
  EXPECT_TRUE(absl::StartsWith(ReadFile(dir + "/fleet_real_goodput.svg"), "<svg"));
}

}  // namespace
}  // namespace fleet
