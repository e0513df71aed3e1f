// A fleet-wide rate per caller key (throttle.perCaller.global) against
// Debian's redis-server started by the test: two servers' PerCallerLimits,
// built as the server builds them (PerCallerFleetLimits() with the Redis
// backend), share each tenant's bucket; a flooding tenant is held to its
// rate and takes nothing from a quiet one; Redis killed mid-run leaves each
// key on its local share without a call ever waiting, and the keys go back
// to the fleet's limit when Redis is back. Real time: bounds are loose,
// loops bounded.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/clock.h"
#include "src/global_limits/global_rate_limit.h"
#include "src/policy/global_throttle_policy.h"
#include "src/redis_limits/redis_fleet_limit_backend.h"
#include "tests/global_limits/global_limit_testing.h"
#include "tests/testing/eventually.h"
#include "tests/testing/redis_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using Verdict = PerCallerLimits::Verdict;

constexpr double kRate = 50;  // per key, for the fleet
constexpr int64_t kBurst = 10;

PerCallerSettings FleetSettings(int port) {
  PerCallerSettings s;
  s.header = "x-tenant-id";
  s.global = testing::Settings(port, kRate, kBurst, "");
  s.global->path = "methodConfig[0].throttle.perCaller.global";
  s.global->timeout = absl::Seconds(1);  // a loaded machine is not an outage
  s.limits.max_keys = 100;
  s.limits.fleet = LimiterOptions(*s.global);
  return s;
}

std::unique_ptr<PerCallerLimits> MakeServer(const PerCallerSettings& s) {
  auto made = PerCallerFleetLimits(s, "cache.v1.CacheService/Get", Clock::Real(),
                                   RedisFleetLimitBackend());
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// What a stretch of load admitted, per tenant, and the slowest admission.
struct Tally {
  int64_t flood = 0;
  int64_t quiet = 0;
  int64_t quiet_offered = 0;
  absl::Duration slowest;
};

// Each millisecond for `d`: the flood tenant offers 2 calls to each server
// (4000/s, 80 times its rate); every 50 ms the quiet one offers 1 call to
// each (40/s, 80 % of its rate).
Tally Load(PerCallerLimits& a, PerCallerLimits& b, absl::Duration d) {
  Tally t;
  const CriticalityShares shares;
  auto offer = [&](PerCallerLimits& server, const char* key) {
    const absl::Time before = absl::Now();
    const bool admitted =
        server.TryAcquire(key, shares, Criticality::kCritical).verdict == Verdict::kAdmitted;
    t.slowest = std::max(t.slowest, absl::Now() - before);
    return admitted ? 1 : 0;
  };
  const absl::Time start = absl::Now();
  for (int64_t ms = 0;; ++ms) {
    const absl::Time at = start + absl::Milliseconds(ms);
    if (at >= start + d) break;
    const absl::Duration wait = at - absl::Now();
    if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
    for (int i = 0; i < 2; ++i) t.flood += offer(a, "flood") + offer(b, "flood");
    if (ms % 50 == 0) {
      t.quiet += offer(a, "quiet") + offer(b, "quiet");
      t.quiet_offered += 2;
    }
  }
  return t;
}

class PerCallerFleetTest : public testing::RedisTest {};

TEST_F(PerCallerFleetTest, EachTenantHeldToItsFleetRateAcrossTwoServersAndRedisOutage) {
  const PerCallerSettings settings = FleetSettings(redis_->port());
  auto a = MakeServer(settings);
  auto b = MakeServer(settings);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);

  // Up: over 3 s each tenant's bucket is shared by both servers. The flood
  // gets its rate x time + burst, plus what each server admitted on its
  // local share before its first lease (a burst of 5 at most) and the
  // lease each still holds (5 at most); the quiet tenant gets all it asks.
  const absl::Duration up = absl::Seconds(3);
  const Tally t1 = Load(*a, *b, up);
  const double expected = kRate * absl::ToDoubleSeconds(up) + kBurst;
  EXPECT_LE(t1.flood, expected + 2 * 5 + 2 * 5);
  EXPECT_GE(t1.flood, 0.85 * expected);
  EXPECT_GE(t1.quiet, t1.quiet_offered - 2);  // its first calls may beat a lease
  EXPECT_EQ(redis_->Command({"EXISTS", "grpc_resilience:cache.v1.CacheService/Get:caller:flood"})
                .value_or(""),
            "1");
  EXPECT_TRUE(a->fleet_queue()->store_up());

  // Redis killed: each key on its local share (the share it was seen to
  // take, about half the rate per server), no call waits.
  redis_->Kill();
  const absl::Duration down = absl::Seconds(2);
  const Tally t2 = Load(*a, *b, down);
  EXPECT_FALSE(a->fleet_queue()->store_up());
  EXPECT_EQ(a->fleet_queue()->outages(), 1);
  EXPECT_LT(t2.slowest, absl::Milliseconds(50)) << "a call waited on Redis";
  EXPECT_GE(t2.flood, 0.3 * kRate * absl::ToDoubleSeconds(down));
  EXPECT_LE(t2.flood, 2 * (kRate * absl::ToDoubleSeconds(down) + kBurst));
  EXPECT_GE(t2.quiet, t2.quiet_offered / 2);

  // Back: every key leases again, and the fleet's limit holds again.
  ASSERT_TRUE(redis_->Restart().ok());
  ASSERT_TRUE(Eventually([&] {
    Load(*a, *b, absl::Milliseconds(100));
    return a->fleet_queue()->recoveries() == 1 && b->fleet_queue()->recoveries() == 1;
  }));
  const Tally t3 = Load(*a, *b, up);
  EXPECT_LE(t3.flood, expected + 2 * 5 + 2 * 5);
  EXPECT_GE(t3.flood, 0.85 * kRate * absl::ToDoubleSeconds(up));
  EXPECT_GE(t3.quiet, t3.quiet_offered - 2);
  EXPECT_LT(t3.slowest, absl::Milliseconds(50));
  std::printf("per-key fleet rate %g/s, burst %d, 2 servers: up %gs flood %ld (expected %g) "
              "quiet %ld/%ld; Redis down %gs flood %ld quiet %ld/%ld, slowest call %s; back "
              "%gs flood %ld quiet %ld/%ld\n",
              kRate, static_cast<int>(kBurst), absl::ToDoubleSeconds(up), t1.flood, expected,
              t1.quiet, t1.quiet_offered, absl::ToDoubleSeconds(down), t2.flood, t2.quiet,
              t2.quiet_offered, absl::FormatDuration(t2.slowest).c_str(),
              absl::ToDoubleSeconds(up), t3.flood, t3.quiet, t3.quiet_offered);
  // One worker per server, whatever the keys: one connection each (and the
  // test's own).
  const std::string clients = redis_->Command({"CLIENT", "LIST"}).value_or("");
  EXPECT_EQ(std::count(clients.begin(), clients.end(), '\n'), 3) << clients;
}

// Two scopes of one server (one backend) on one Redis: one thread and one
// connection serve both; a scope that goes leaves the other served.
TEST_F(PerCallerFleetTest, ScopesOnOneRedisShareOneWorkerAndConnection) {
  const RedisFleetLimitBackend backend;
  PerCallerSettings settings = FleetSettings(redis_->port());
  auto get = PerCallerFleetLimits(settings, "cache.v1.CacheService/Get", Clock::Real(), backend);
  auto put = PerCallerFleetLimits(settings, "cache.v1.CacheService/Put", Clock::Real(), backend);
  ASSERT_TRUE(get.ok() && put.ok());
  const CriticalityShares shares;
  ASSERT_TRUE(Eventually([&] {
    (*get)->TryAcquire("tenant", shares, Criticality::kCritical);
    (*put)->TryAcquire("tenant", shares, Criticality::kCritical);
    return (*get)->fleet_queue()->leases() > 0 && (*put)->fleet_queue()->leases() > 0;
  }));
  // Each scope's keys are buckets of their own.
  EXPECT_EQ(redis_->Command({"EXISTS", "grpc_resilience:cache.v1.CacheService/Get:caller:tenant",
                             "grpc_resilience:cache.v1.CacheService/Put:caller:tenant"})
                .value_or(""),
            "2");
  const std::string clients = redis_->Command({"CLIENT", "LIST"}).value_or("");
  EXPECT_EQ(std::count(clients.begin(), clients.end(), '\n'), 2) << clients;  // and the test's
  get->reset();
  const int64_t before = (*put)->fleet_queue()->leases();
  ASSERT_TRUE(Eventually([&] {
    for (int i = 0; i < 100; ++i) (*put)->TryAcquire("tenant", shares, Criticality::kCritical);
    return (*put)->fleet_queue()->leases() > before;
  }));
}

// Caller keys come and go (a header's values, peers' addresses), and the
// server forgets them (maxKeys): their Redis buckets must go too, or Redis
// grows with every key ever seen. A bucket left alone is full again after
// (burst - tokens) / rate, the same as a missing one, so it may expire then.
TEST_F(PerCallerFleetTest, CallerKeysBucketsInRedisExpireOnceFullAgain) {
  PerCallerSettings settings = FleetSettings(redis_->port());
  settings.limits.max_keys = 10;
  auto server = MakeServer(settings);
  ASSERT_NE(server, nullptr);
  const CriticalityShares shares;
  constexpr int kKeys = 50;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "caller-" + std::to_string(k);
    const int64_t before = server->fleet_queue()->leases();
    ASSERT_TRUE(Eventually([&] {
      server->TryAcquire(key, shares, Criticality::kCritical);
      return server->fleet_queue()->leases() > before;
    })) << key;
  }
  EXPECT_EQ(server->keys_tracked(), 10);
  const std::string name = "grpc_resilience:cache.v1.CacheService/Get:caller:caller-0";
  absl::StatusOr<std::string> pttl = redis_->Command({"PTTL", name});
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  int64_t ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(*pttl, &ms)) << *pttl;
  // Within a refill (10 / 50/s = 200 ms) and a second of margin; never -1.
  EXPECT_GT(ms, 0) << name;
  EXPECT_LE(ms, 1200) << name;
  // Left alone, every bucket goes.
  EXPECT_TRUE(Eventually([&] { return redis_->Command({"DBSIZE"}).value_or("") == "0"; }))
      << redis_->Command({"DBSIZE"}).value_or("");
}

}  // namespace
}  // namespace resilience
