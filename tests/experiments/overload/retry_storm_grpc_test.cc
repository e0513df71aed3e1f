// The overload experiment's retry scenario, shortened (about 4 s): naive
// gRPC retryPolicy clients at twice the capacity of a real server. What is
// asserted does not depend on timing: today's throttle sees every retry as
// a first attempt, retryShedding refuses retries as retries, and with
// doNotRetry no call is attempted twice. The goodput figures are the
// experiment's (docs/criticality.md), not this test's.

#include "experiments/overload/retry_storm_grpc.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace overload {
namespace {

TEST(RetryStormGrpcTest, RetriesAreShedAsRetriesAndDoNotRetryStopsThem) {
  RetryStormConfig config;
  config.duration = absl::Seconds(1);
#ifdef RESILIENCE_SANITIZED
  config.service_time *= 2;
  config.deadline *= 2;
#endif
  std::vector<RetryStormServer> servers;
  for (const RetryStormServer& s : RetryStormServers(config)) {
    if (s.name == "fixed today" || s.name == "fixed retry_shedding" ||
        s.name == "fixed do_not_retry") {
      servers.push_back(s);
    }
  }
  ASSERT_EQ(servers.size(), 3u);
  absl::StatusOr<RetryStormResult> result = RunRetryStorm(config, servers);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->runs.size(), 3u);
  const RetryStormRun& today = result->runs[0];
  const RetryStormRun& shedding = result->runs[1];
  const RetryStormRun& do_not_retry = result->runs[2];
  for (const RetryStormRun& run : result->runs) {
    EXPECT_GT(run.offered, 0) << run.server;
    EXPECT_EQ(run.ok_in_deadline + run.rejected + run.late, run.offered) << run.server;
  }
  // At 2 C half the calls are refused at least once: retried by the
  // clients, judged as first attempts by today's throttle.
  EXPECT_EQ(today.rejected_retry, 0);
  EXPECT_GT(today.admitted + today.rejected_concurrency, today.offered);
  EXPECT_GT(shedding.rejected_retry, 0);
  // "Do not retry": one attempt per call, each admitted or refused once.
  EXPECT_EQ(do_not_retry.rejected_retry, 0);
  EXPECT_EQ(do_not_retry.admitted + do_not_retry.rejected_concurrency, do_not_retry.offered);
  EXPECT_EQ(RetryStormToTable(*result).find("nan"), std::string::npos);
}

}  // namespace
}  // namespace overload
