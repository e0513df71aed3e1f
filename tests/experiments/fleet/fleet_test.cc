// The fleet simulator's small case (30 clients, 3 servers of 4 workers x
// 10 ms, 1,200 calls/s, half of it offered): what a fleet operator relies on
// when choosing a retry configuration, deterministic for the seed.

#include <string>

#include "experiments/fleet/fleet_simulator.h"
#include "gtest/gtest.h"

namespace fleet {
namespace {

Config Small(TriggerKind kind, absl::Duration length) {
  Config c;
  c.clients = 30;
  c.servers = 3;
  c.workers = 4;
  c.load = 0.5;
  c.trigger.kind = kind;
  c.trigger.length = length;
  c.after = absl::Seconds(20);
  return c;
}

RunResult RunPolicy(const Config& config, const std::string& policy) {
  absl::StatusOr<FleetPolicy> p = StandardPolicy(policy);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<RunResult> r = Simulate(config, *p);
  EXPECT_TRUE(r.ok()) << r.status();
  return *std::move(r);
}

TEST(FleetPolicyTest, BuiltFromThePolicyFilesAsAChannelWould) {
  absl::StatusOr<FleetPolicy> recommended = StandardPolicy("recommended");
  ASSERT_TRUE(recommended.ok()) << recommended.status();
  EXPECT_EQ(recommended->retry.max_attempts, 3);
  ASSERT_TRUE(recommended->throttle.has_value());
  EXPECT_EQ(recommended->throttle->max_tokens, 10);
  EXPECT_DOUBLE_EQ(recommended->throttle->token_ratio, 0.1);
  EXPECT_EQ(recommended->breaker.kind, resilience::BreakerKind::kSre);
  EXPECT_EQ(recommended->per_attempt_timeout, absl::Milliseconds(200));
  EXPECT_FALSE(recommended->server_throttle.has_value());

  absl::StatusOr<FleetPolicy> naive = StandardPolicy("naive");
  ASSERT_TRUE(naive.ok()) << naive.status();
  EXPECT_EQ(naive->retry.max_attempts, 5);
  EXPECT_FALSE(naive->retry.budget.has_value());
  EXPECT_FALSE(naive->throttle.has_value());
  EXPECT_EQ(naive->breaker.kind, resilience::BreakerKind::kNone);

  absl::StatusOr<FleetPolicy> pushback = StandardPolicy("recommended+pushback");
  ASSERT_TRUE(pushback.ok()) << pushback.status();
  ASSERT_TRUE(pushback->server_throttle.has_value());
  EXPECT_EQ(pushback->server_throttle->max_concurrency, 64);

  EXPECT_EQ(StandardPolicy("nope").status().code(), absl::StatusCode::kNotFound);
}

// During a 5 s outage, naive retries multiply the attempts (every refused
// attempt is retried at once, 5 times), while the recommended chain's
// retryThrottling keeps them within 1 + its token ratio.
TEST(FleetTest, NaiveRetriesAmplifyAnOutageTheRecommendedChainDoesNot) {
  const Config c = Small(TriggerKind::kOutage, absl::Seconds(5));
  const RunResult naive = RunPolicy(c, "naive");
  const RunResult recommended = RunPolicy(c, "recommended");
  const RunResult throttled = RunPolicy(c, "grpc-throttled");
  EXPECT_GT(naive.trigger_amplification, 3.0);
  EXPECT_LE(recommended.trigger_amplification, 1.1);
  EXPECT_LE(throttled.trigger_amplification, 1.1);
  // All of them come back once the servers do.
  EXPECT_TRUE(naive.recovered);
  EXPECT_TRUE(recommended.recovered);
}

// A +300 ms latency spike of 5 s at half the capacity: every attempt times
// out at 0.2 s, naive clients send 5 of each call, the servers fill with
// work nobody waits for and stay full after the spike is over (metastable);
// the recommended chain recovers.
TEST(FleetTest, NaiveRetriesStayDownAfterALatencySpikeTheRecommendedChainRecovers) {
  const Config c = Small(TriggerKind::kLatencySpike, absl::Seconds(5));
  const RunResult none = RunPolicy(c, "none");
  const RunResult naive = RunPolicy(c, "naive");
  const RunResult recommended = RunPolicy(c, "recommended");
  EXPECT_TRUE(none.recovered);
  EXPECT_EQ(none.recovery_seconds, 0);
  EXPECT_FALSE(naive.recovered);
  EXPECT_LT(naive.final_goodput, 0.05);
  EXPECT_GT(naive.window_amplification, 4.0);
  EXPECT_TRUE(recommended.recovered);
  EXPECT_GT(recommended.final_goodput, 0.99);
  EXPECT_LE(recommended.window_amplification, 1.1);
}

// A server limit answers the excess at once instead of queueing it: with
// capacity halved for 10 s, the adaptive limit keeps most calls succeeding
// during the trigger, where the queue alone serves late.
TEST(FleetTest, AServerLimitKeepsGoodputThroughHalfCapacity) {
  Config c = Small(TriggerKind::kCapacityHalf, absl::Seconds(10));
  c.load = 0.9;
  const RunResult recommended = RunPolicy(c, "recommended");
  const RunResult adaptive = RunPolicy(c, "recommended+adaptive");
  EXPECT_TRUE(adaptive.recovered);
  EXPECT_GT(adaptive.window_goodput, recommended.window_goodput + 0.1);
}

TEST(FleetPolicyTest, DiagnosticVariantsChangeOnlyWhatTheirNameSays) {
  absl::StatusOr<FleetPolicy> recommended = StandardPolicy("recommended");
  ASSERT_TRUE(recommended.ok()) << recommended.status();
  // The library's default: per-endpoint breakers gate the method's breaker.
  EXPECT_TRUE(recommended->breaker.per_endpoint);
  absl::StatusOr<FleetPolicy> method = StandardPolicy("recommended-method-breaker");
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_FALSE(method->breaker.per_endpoint);
  EXPECT_EQ(method->breaker.kind, resilience::BreakerKind::kSre);
  EXPECT_EQ(method->retry.max_attempts, 3);
  absl::StatusOr<FleetPolicy> naive = StandardPolicy("naive-budget-1000");
  ASSERT_TRUE(naive.ok()) << naive.status();
  EXPECT_EQ(naive->retry.max_attempts, 5);
  ASSERT_TRUE(naive->retry.budget.has_value());
  EXPECT_EQ(naive->retry.budget->max_tokens, 1000);
  EXPECT_FALSE(naive->budget_stripped);
  EXPECT_FALSE(naive->client_json.empty());
  // Changed after loading: no file a real channel could load says this.
  EXPECT_TRUE(StandardPolicy("naive")->budget_stripped);
  EXPECT_TRUE(StandardPolicy("recommended-no-breaker")->client_json.empty());
}

// The client chain's BreakerStage: with a breaker per server, the method's
// breaker rejects only while the service is failing (ten failures in a row
// with no server named, or every server's breaker open). After a latency
// spike the answers are back at once, so the method's rejections are waived
// and the fleet recovers at once; one breaker per client drops calls until
// the spike's failures leave its 10 s window.
TEST(FleetTest, PerServerBreakersWaiveTheMethodBreakersRejectionsOnceAnswersComeBack) {
  const Config c = Small(TriggerKind::kLatencySpike, absl::Seconds(5));
  const RunResult endpoints = RunPolicy(c, "recommended");
  const RunResult method = RunPolicy(c, "recommended-method-breaker");
  ASSERT_TRUE(endpoints.recovered);
  ASSERT_TRUE(method.recovered);
  EXPECT_LT(endpoints.recovery_seconds, method.recovery_seconds);
  int64_t refused_after = 0;
  int64_t refused_after_method = 0;
  const size_t end = static_cast<size_t>(absl::ToDoubleSeconds(c.warmup + c.trigger.length) /
                                         absl::ToDoubleSeconds(c.bin));
  for (size_t i = end + 2; i < endpoints.bins.size(); ++i) {
    refused_after += endpoints.bins[i].refused_locally;
    refused_after_method += method.bins[i].refused_locally;
  }
  EXPECT_GT(refused_after_method, 0);
  EXPECT_LT(refused_after, refused_after_method);
  // Both still shed during the spike: every attempt times out, no server is
  // named, and ten in a row make the service failing.
  int64_t refused_during = 0;
  const size_t start = static_cast<size_t>(absl::ToDoubleSeconds(c.warmup) /
                                           absl::ToDoubleSeconds(c.bin));
  for (size_t i = start; i < end; ++i) refused_during += endpoints.bins[i].refused_locally;
  EXPECT_GT(refused_during, 0);
}

// The retryThrottling bucket's burst: its upper half is what a client may
// retry before the token ratio limits it, however few calls it makes. At
// 0.8 calls/s per client (the sweep's 1,000 clients at 0.1 C), the bucket
// alone (maxTokens 10, the file as shipped before its retryBudget had a
// ttl) lets each client retry 4 times at the first failures: over a 5 s
// spike or outage and the 10 s after it, a quarter more attempts than
// calls. maxTokens 4 lets it retry once; the shipped windowed retryBudget
// (tokenRatio 0.1 of the client's calls over 5 s) lets it retry only what
// its calls funded: both within 1 + the token ratio (0.1), and the shipped
// file recovers at once.
TEST(FleetTest, LowRateClientsRetryWithinTheTokenRatio) {
  for (TriggerKind kind : {TriggerKind::kLatencySpike, TriggerKind::kOutage}) {
    Config c = Small(kind, absl::Seconds(5));
    c.clients = 150;  // 0.1 x 1,200 calls/s: 0.8 calls/s each
    c.load = 0.1;
    const RunResult shipped = RunPolicy(c, "recommended");
    const RunResult bucket = RunPolicy(c, "recommended-bucket-only");
    const RunResult four = RunPolicy(c, "recommended-tokens-4");
    EXPECT_LE(shipped.window_amplification, 1.1) << static_cast<int>(kind);
    EXPECT_LE(shipped.trigger_amplification, 1.1) << static_cast<int>(kind);
    EXPECT_GT(bucket.window_amplification, 1.15) << static_cast<int>(kind);
    EXPECT_LE(four.window_amplification, 1.1) << static_cast<int>(kind);
    EXPECT_TRUE(shipped.recovered);
    EXPECT_EQ(shipped.recovery_seconds, 0);
  }
}

// The bucket-only variant is the shipped file less Get's retryBudget: the
// same throttle, retries and breaker, no windowed budget.
TEST(FleetPolicyTest, BucketOnlyVariantDropsOnlyTheWindowedBudget) {
  absl::StatusOr<FleetPolicy> shipped = StandardPolicy("recommended");
  absl::StatusOr<FleetPolicy> bucket = StandardPolicy("recommended-bucket-only");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  ASSERT_TRUE(shipped->retry.windowed_budget.has_value());
  EXPECT_EQ(shipped->retry.windowed_budget->ttl, absl::Seconds(5));
  EXPECT_FALSE(bucket->retry.windowed_budget.has_value());
  EXPECT_FALSE(bucket->retry.budget.has_value());  // the file has retryThrottling
  ASSERT_TRUE(bucket->throttle.has_value());
  EXPECT_EQ(bucket->throttle->max_tokens, shipped->throttle->max_tokens);
  EXPECT_EQ(bucket->retry.max_attempts, shipped->retry.max_attempts);
  EXPECT_EQ(bucket->breaker.kind, shipped->breaker.kind);
  EXPECT_FALSE(bucket->client_json.empty());  // a file: it runs over real gRPC too
}

TEST(FleetPolicyTest, TokensVariantChangesOnlyTheThrottlesBucket) {
  absl::StatusOr<FleetPolicy> shipped = StandardPolicy("recommended");
  absl::StatusOr<FleetPolicy> four = StandardPolicy("recommended-tokens-4");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  ASSERT_TRUE(four.ok()) << four.status();
  ASSERT_TRUE(four->throttle.has_value());
  EXPECT_EQ(four->throttle->max_tokens, 4);
  EXPECT_DOUBLE_EQ(four->throttle->token_ratio, shipped->throttle->token_ratio);
  EXPECT_EQ(four->retry.max_attempts, shipped->retry.max_attempts);
  EXPECT_EQ(four->breaker.kind, shipped->breaker.kind);
  EXPECT_FALSE(four->client_json.empty());  // a file: it runs over real gRPC too
  // The loader's own check of the value.
  absl::StatusOr<FleetPolicy> zero = StandardPolicy("recommended-tokens-0");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("maxTokens"), std::string::npos) << zero.status();
  EXPECT_EQ(StandardPolicy("recommended-tokens-x").status().code(), absl::StatusCode::kNotFound);
}

TEST(FleetTest, DeterministicForTheSeed) {
  Config c = Small(TriggerKind::kOutage, absl::Seconds(5));
  c.after = absl::Seconds(10);
  const RunResult a = RunPolicy(c, "recommended");
  const RunResult b = RunPolicy(c, "recommended");
  ASSERT_EQ(a.bins.size(), b.bins.size());
  bool differs_from_other_seed = false;
  c.seed = 2;
  const RunResult other = RunPolicy(c, "recommended");
  for (size_t i = 0; i < a.bins.size(); ++i) {
    EXPECT_EQ(a.bins[i].offered, b.bins[i].offered) << "bin " << i;
    EXPECT_EQ(a.bins[i].succeeded, b.bins[i].succeeded) << "bin " << i;
    EXPECT_EQ(a.bins[i].attempts, b.bins[i].attempts) << "bin " << i;
    EXPECT_EQ(a.bins[i].refused_locally, b.bins[i].refused_locally) << "bin " << i;
    if (a.bins[i].offered != other.bins[i].offered) differs_from_other_seed = true;
  }
  EXPECT_EQ(a.events, b.events);
  EXPECT_TRUE(differs_from_other_seed);
}

TEST(FleetTest, RejectsAConfigItCannotRun) {
  absl::StatusOr<FleetPolicy> p = StandardPolicy("none");
  ASSERT_TRUE(p.ok());
  Config c = Small(TriggerKind::kOutage, absl::Seconds(5));
  c.servers = 0;
  absl::StatusOr<RunResult> r = Simulate(c, *p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("servers"), std::string::npos) << r.status();
  c = Small(TriggerKind::kOutage, absl::Seconds(5));
  c.after = absl::Seconds(3);
  EXPECT_FALSE(Simulate(c, *p).ok());
}

}  // namespace
}  // namespace fleet
