// GlobalRateLimiter on a simulated clock with a fake lease source and an
// in-memory fleet bucket that does what the Redis script does: the fleet's
// total, the lease sizes, the fallback to a local share and the way back.

#include "src/limits/global_rate_limiter.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// The fleet's bucket, as the Lua script keeps it: refilled at `rate` up to
// `burst`, a lease takes min(wanted, floor(tokens)).
class FakeStore {
 public:
  FakeStore(double rate, double burst, Clock& clock)
      : rate_(rate), burst_(burst), tokens_(burst), clock_(clock), last_(clock.Now()) {}

  int64_t Take(int64_t wanted, double* remaining) {
    const absl::Time now = clock_.Now();
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * rate_);
    last_ = now;
    const int64_t granted = std::min<int64_t>(wanted, static_cast<int64_t>(std::floor(tokens_)));
    tokens_ -= static_cast<double>(granted);
    *remaining = tokens_;
    return granted;
  }

 private:
  const double rate_;
  const double burst_;
  double tokens_;
  Clock& clock_;
  absl::Time last_;
};

// Counts wakes; the test plays the source's thread.
class FakeSource : public LeaseSource {
 public:
  void Wake() override { wakes.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<int64_t> wakes{0};
};

class GlobalRateLimiterTest : public ::testing::Test {
 protected:
  std::unique_ptr<GlobalRateLimiter> Make(double rate, int64_t burst, int replicas = 1) {
    GlobalRateLimiter::Options o;
    o.rate_per_second = rate;
    o.burst = burst;
    o.expected_replicas = replicas;
    o.name = "test";
    o.log = [this](const std::string& line) { log_.push_back(line); };
    auto limiter = GlobalRateLimiter::Create(o, clock_);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    (*limiter)->Attach(&source_);
    return *std::move(limiter);
  }
  // What the source's thread does when woken: one round trip.
  static void Refill(GlobalRateLimiter& limiter, FakeStore& store) {
    const int64_t want = limiter.LeaseWanted();
    if (want == 0) return;
    double remaining = 0;
    const int64_t granted = store.Take(want, &remaining);
    limiter.OnLease(want, granted, remaining);
  }
  static int Drain(GlobalRateLimiter& limiter) {
    int n = 0;
    while (limiter.TryAcquire()) ++n;
    return n;
  }

  SimulatedClock clock_;
  FakeSource source_;
  std::vector<std::string> log_;
};

TEST_F(GlobalRateLimiterTest, ValidateNamesFieldAndValue) {
  GlobalRateLimiter::Options o;
  o.rate_per_second = 100;
  o.burst = 10;
  EXPECT_TRUE(GlobalRateLimiter::Validate(o).ok());
  o.expected_replicas = 0;
  EXPECT_THAT(GlobalRateLimiter::Validate(o).message(),
              HasSubstr("expectedReplicas: must be in [1, 10000], got 0"));
  o.expected_replicas = 3;
  o.lease_lifetime = absl::Milliseconds(50);
  EXPECT_THAT(GlobalRateLimiter::Validate(o).message(), HasSubstr("leaseLifetime"));
  o.lease_lifetime = absl::Seconds(1);
  o.rate_per_second = 0;
  EXPECT_FALSE(GlobalRateLimiter::Validate(o).ok());
}

// Before the store first answers, a server admits its even share of the
// burst and rate, and nothing is logged.
TEST_F(GlobalRateLimiterTest, StartsWithEvenLocalShare) {
  auto limiter = Make(300, 90, 3);
  EXPECT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kStarting);
  EXPECT_EQ(Drain(*limiter), 30);
  clock_.AdvanceTime(absl::Milliseconds(100));  // 100/s locally: 10 tokens
  EXPECT_EQ(Drain(*limiter), 10);
  EXPECT_TRUE(log_.empty());
  EXPECT_GT(source_.wakes.load(), 0);  // it asked for a lease all along
}

// Leased tokens admit calls one each; the source is woken when half a lease
// is left, and a server without tokens on the global limit rejects with the
// time until the fleet's bucket has one.
TEST_F(GlobalRateLimiterTest, AdmitsLeasedTokensOnly) {
  auto limiter = Make(100, 100);
  FakeStore store(100, 100, clock_);
  Refill(*limiter, store);  // no demand seen yet: a lease of 1
  EXPECT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kGlobal);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("in use, 100/s"));
  EXPECT_EQ(limiter->Stats().tokens_leased, 1);
  EXPECT_EQ(Drain(*limiter), 1);
  absl::Duration retry_after;
  EXPECT_FALSE(limiter->TryAcquire(&retry_after));
  EXPECT_GE(retry_after, absl::Milliseconds(1));
  const GlobalRateLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.admitted_leased, 1);
  EXPECT_EQ(stats.admitted_local, 0);
  EXPECT_EQ(stats.rejected, 2);
}

// The lease follows the local demand over leaseInterval (100ms), up to the
// fleet's rate over it.
TEST_F(GlobalRateLimiterTest, LeaseSizeFollowsLocalDemand) {
  auto limiter = Make(1000, 1000);
  FakeStore store(1000, 1000, clock_);
  Refill(*limiter, store);
  // 50 calls/s for a while: leases of about 5.
  for (int ms = 0; ms < 1000; ++ms) {
    if (ms % 20 == 0) limiter->TryAcquire();
    Refill(*limiter, store);
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  clock_.AdvanceTime(absl::Milliseconds(100));
  while (limiter->TryAcquire()) {
  }
  int64_t want = limiter->LeaseWanted();
  EXPECT_GE(want, 4);
  EXPECT_LE(want, 7);
  // 20000 calls/s offered: the largest lease, 1000/s * 100ms.
  for (int ms = 0; ms < 300; ++ms) {
    for (int i = 0; i < 20; ++i) limiter->TryAcquire();
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  while (limiter->TryAcquire()) {
  }
  EXPECT_EQ(limiter->LeaseWanted(), 100);
  EXPECT_EQ(limiter->MaxLease(), 100);
}

// A jump in demand is seen within the interval: once the calls since the
// last estimate exceed a lease, the next lease follows them, not 100 ms later.
TEST_F(GlobalRateLimiterTest, LeaseGrowsWithinTheIntervalOnADemandJump) {
  auto limiter = Make(100'000, 100'000);
  FakeStore store(100'000, 100'000, clock_);
  Refill(*limiter, store);  // a lease of 1: no demand seen
  clock_.AdvanceTime(absl::Milliseconds(1));
  for (int i = 0; i < 50; ++i) limiter->TryAcquire();  // 50'000/s for 1 ms
  // 50'000/s x 100 ms.
  EXPECT_EQ(limiter->LeaseWanted(), 5000);
}

// Three servers offered 3x the fleet's rate unevenly (70/20/10%) admit
// together rate * time + burst, less at most the tokens they still hold.
TEST_F(GlobalRateLimiterTest, FleetAdmitsRateTimesTimePlusBurst) {
  constexpr double kRate = 200;
  constexpr int64_t kBurst = 100;
  FakeStore store(kRate, kBurst, clock_);
  std::vector<std::unique_ptr<GlobalRateLimiter>> fleet;
  for (int i = 0; i < 3; ++i) fleet.push_back(Make(kRate, kBurst, 3));
  for (auto& l : fleet) Refill(*l, store);  // the first round trip
  const int kPerMs[3] = {42, 12, 6};          // per 100 ms: 3x the rate (600/s)
  int64_t admitted[3] = {0, 0, 0};
  for (int ms = 0; ms < 10'000; ++ms) {
    for (int i = 0; i < 3; ++i) {
      // Offered load spread over each 100 ms (kPerMs calls per 100 ms / 10).
      for (int c = 0; c < kPerMs[i]; ++c) {
        if ((ms * kPerMs[i] + c) % 10 == 0) admitted[i] += fleet[i]->TryAcquire() ? 1 : 0;
      }
      // Round trips take 1 ms; after a short one, wait for the bucket.
      Refill(*fleet[i], store);
    }
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  int64_t total = admitted[0] + admitted[1] + admitted[2];
  int64_t held = 0;
  for (auto& l : fleet) held += l->Stats().tokens_leased - l->Stats().admitted_leased;
  // Leased and admitted tokens are the store's tokens: at most rate x 10s +
  // burst, and only the held ones short of it (the first leases came in at
  // time 0, so the local share admitted nothing).
  EXPECT_LE(total, 2100);
  EXPECT_GE(total + held, 2099);
  EXPECT_LE(held, 3 * fleet[0]->MaxLease());
  EXPECT_NEAR(total, 2100, 2100 * 0.05);
  // Everyone got something, the busiest the most.
  EXPECT_GT(admitted[2], 0);
  EXPECT_GT(admitted[0], admitted[1]);
}

// The store going away: one log line, the local share (the share observed,
// the fleet having used the whole rate), leased tokens still usable; back
// to the global limit with one more line when it answers again.
TEST_F(GlobalRateLimiterTest, FallsBackToObservedShareAndRecovers) {
  auto limiter = Make(100, 10, 4);
  FakeStore store(100, 10, clock_);
  // This server gets every other token of the fleet: 50/s of 100/s.
  for (int ms = 0; ms < 3000; ++ms) {
    for (int i = 0; i < 5; ++i) limiter->TryAcquire();
    // Turns of 10 ms: this server's round trips, then the rest of the
    // fleet's, which takes whatever accrued.
    if ((ms / 10) % 2 == 0) {
      Refill(*limiter, store);
    } else {
      double remaining;
      store.Take(1000, &remaining);
    }
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  log_.clear();
  limiter->OnFailure("connection refused");
  limiter->OnFailure("connection refused");  // still down: no new line
  EXPECT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kLocal);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("store unreachable (connection refused)"));
  EXPECT_NEAR(limiter->local_rate(), 50, 5);  // not 100 / 4
  // Leaving the global limit, the local bucket starts empty: what can be
  // admitted at once is the tokens still held, no more.
  const GlobalRateLimiterStats before = limiter->Stats();
  EXPECT_EQ(Drain(*limiter),
            before.tokens_leased - before.admitted_leased - before.tokens_expired);
  // 2 s on the local share alone.
  int64_t admitted = 0;
  for (int ms = 0; ms < 2000; ++ms) {
    for (int i = 0; i < 5; ++i) admitted += limiter->TryAcquire() ? 1 : 0;
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  EXPECT_NEAR(admitted, 2 * limiter->local_rate(), 3);
  EXPECT_EQ(limiter->Stats().fallbacks, 1);
  EXPECT_EQ(limiter->Stats().lease_failures, 2);
  Refill(*limiter, store);
  EXPECT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kGlobal);
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_THAT(log_[1], HasSubstr("reachable again"));
  EXPECT_EQ(limiter->Stats().recoveries, 1);
}

// Without a share observed (the store never answered), the even split.
TEST_F(GlobalRateLimiterTest, FallsBackToEvenSplitWithoutObservation) {
  auto limiter = Make(90, 9, 3);
  limiter->OnFailure("timeout");
  EXPECT_NEAR(limiter->local_rate(), 30, 0.01);
  // The store never answered: the starting share's bucket goes on as it
  // was, full (its share of the burst, 9 * 30 / 90), so a store unreachable
  // at start turns away no call the starting share would have admitted.
  EXPECT_EQ(Drain(*limiter), 3);
  clock_.AdvanceTime(absl::Milliseconds(100));
  EXPECT_EQ(Drain(*limiter), 3);  // 30/s for 0.1 s
  clock_.AdvanceTime(absl::Seconds(1));
  EXPECT_EQ(Drain(*limiter), 3);  // refilled only to its share of the burst
}

// A server that stops taking calls gives its tokens back after the lease
// lifetime (they are dropped, and the fleet's bucket refills without them).
TEST_F(GlobalRateLimiterTest, UnusedTokensExpire) {
  auto limiter = Make(1000, 1000);
  FakeStore store(1000, 1000, clock_);
  for (int ms = 0; ms < 500; ++ms) {
    for (int i = 0; i < 3; ++i) limiter->TryAcquire();
    Refill(*limiter, store);
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  ASSERT_GT(limiter->Stats().tokens_leased - limiter->Stats().admitted_leased, 0);
  clock_.AdvanceTime(absl::Milliseconds(1001));
  limiter->LeaseWanted();
  const GlobalRateLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.tokens_expired, stats.tokens_leased - stats.admitted_leased);
  EXPECT_FALSE(limiter->TryAcquire());
}

// Concurrent callers never admit more than the leased tokens.
TEST_F(GlobalRateLimiterTest, ConcurrentCallersTakeEachTokenOnce) {
  auto limiter = Make(1e6, 100'000);
  limiter->OnLease(10'000, 10'000, 0);
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) admitted += limiter->TryAcquire() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 10'000);
}

// What the store repaired in its bucket is counted every time and logged
// at most once per kind per 10 s, the next line saying how many since.
TEST_F(GlobalRateLimiterTest, AnomaliesAreCountedAndLoggedAtMostOncePerInterval) {
  auto limiter = Make(100, 10);
  FakeStore store(100, 10, clock_);
  Refill(*limiter, store);
  log_.clear();
  using Anomaly = GlobalRateLimiter::Anomaly;
  limiter->OnAnomaly(Anomaly::kKeyLost);
  limiter->OnAnomaly(Anomaly::kKeyLost);
  limiter->OnAnomaly(Anomaly::kClockBack);
  limiter->OnAnomaly(Anomaly::kBadValue);
  ASSERT_EQ(log_.size(), 3u);
  EXPECT_THAT(log_[0], HasSubstr("global rate limit test: bucket lost"));
  EXPECT_THAT(log_[0], HasSubstr("one extra burst of 10"));
  EXPECT_THAT(log_[1], HasSubstr("ahead of the store's clock"));
  EXPECT_THAT(log_[2], HasSubstr("clamped into [0, 10] tokens"));
  clock_.AdvanceTime(GlobalRateLimiter::kAnomalyLogInterval);
  limiter->OnAnomaly(Anomaly::kKeyLost);
  ASSERT_EQ(log_.size(), 4u);
  EXPECT_THAT(log_[3], HasSubstr("(2 times since the last such line)"));
  const GlobalRateLimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.keys_lost, 3);
  EXPECT_EQ(stats.clock_steps, 1);
  EXPECT_EQ(stats.bad_values, 1);
  EXPECT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kGlobal);  // a repair is no failure
}

// On the local share already, a new reason for failing gets a line of its
// own (a reset, then the password refused), each reason once per outage.
TEST_F(GlobalRateLimiterTest, NewFailureReasonsOnTheLocalShareAreLogged) {
  auto limiter = Make(100, 10);
  FakeStore store(100, 10, clock_);
  Refill(*limiter, store);
  log_.clear();
  limiter->OnFailure("connection reset");
  limiter->OnFailure("AUTH refused: WRONGPASS");
  limiter->OnFailure("AUTH refused: WRONGPASS");
  limiter->OnFailure("connection reset");
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_THAT(log_[0], HasSubstr("store unreachable (connection reset)"));
  EXPECT_THAT(log_[1], HasSubstr("still on the local share: AUTH refused: WRONGPASS"));
  EXPECT_EQ(limiter->Stats().lease_failures, 4);
  EXPECT_EQ(limiter->Stats().fallbacks, 1);
  // The next outage logs its reasons afresh.
  limiter->OnLease(1, 1, 5);
  limiter->OnFailure("connection reset");
  ASSERT_EQ(log_.size(), 4u);
  EXPECT_THAT(log_[3], HasSubstr("store unreachable (connection reset)"));
}

}  // namespace
}  // namespace resilience
