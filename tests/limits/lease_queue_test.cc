// A fleet-wide rate per caller key (PerCallerLimits with Options::fleet):
// every key's bucket leased through one LeaseQueue, on a simulated clock,
// from a fake store holding a token bucket per store key. Two "servers"
// (two PerCallerLimits) share the store, as two replicas share Redis.

#include "src/limits/lease_queue.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/limits/per_caller_limits_testing.h"
#include "src/limits/keyed_lease.h"
#include "src/limits/per_caller_limits.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using Verdict = PerCallerLimits::Verdict;

using ::resilience::testing::kCrit;
using ::resilience::testing::kShares;

// The store: a token bucket per store key (as the lease script keeps in
// Redis), refilled on the simulated clock; down when `up` is false.
class FakeStore {
 public:
  explicit FakeStore(SimulatedClock& clock) : clock_(clock) {}

  LeaseQueue::Store AsStore() {
    return [this](const KeyedLease& key, int64_t want) -> absl::StatusOr<LeaseGrant> {
      ++round_trips;
      keys_asked.push_back(key.store_key());
      if (!up) return absl::UnavailableError("connection refused (127.0.0.1:6379)");
      const GlobalRateLimiter::Options& o = key.limiter().options();
      const double now = absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch());
      auto [it, fresh] = buckets_.try_emplace(key.store_key(), Bucket{double(o.burst), now});
      Bucket& b = it->second;
      b.tokens = std::min<double>(o.burst, b.tokens + (now - b.at) * o.rate_per_second);
      b.at = now;
      LeaseGrant grant;
      grant.granted = std::min<int64_t>(want, static_cast<int64_t>(std::floor(b.tokens)));
      b.tokens -= static_cast<double>(grant.granted);
      grant.remaining = b.tokens;
      return grant;
    };
  }

  bool up = true;
  int64_t round_trips = 0;
  std::vector<std::string> keys_asked;

 private:
  struct Bucket {
    double tokens;
    double at;
  };
  SimulatedClock& clock_;
  std::map<std::string, Bucket> buckets_;
};

PerCallerLimits::Options FleetOptions(double rate, int64_t burst, int replicas,
                                      std::vector<std::string>* log = nullptr) {
  PerCallerLimits::Options o;
  GlobalRateLimiter::Options fleet;
  fleet.rate_per_second = rate;
  fleet.burst = burst;
  fleet.expected_replicas = replicas;
  fleet.lease_interval = absl::Milliseconds(100);
  fleet.name = "at 127.0.0.1:6379";
  if (log != nullptr) fleet.log = [log](const std::string& line) { log->push_back(line); };
  o.fleet = fleet;
  o.fleet_prefix = "grpc_resilience:Get:caller";
  o.max_keys = 100;
  return o;
}

std::unique_ptr<PerCallerLimits> Make(const PerCallerLimits::Options& options, Clock& clock) {
  return testing::MakePerCaller(options, clock);
}

// Serves every key due on each server's queue.
void Drain(const std::vector<PerCallerLimits*>& servers, const LeaseQueue::Store& store) {
  for (PerCallerLimits* s : servers) {
    while (s->fleet_queue()->ServeOne(store)) {
    }
  }
}

int64_t Offer(PerCallerLimits& server, const std::string& key, int calls) {
  int64_t admitted = 0;
  for (int i = 0; i < calls; ++i) {
    if (server.TryAcquire(key, kShares, kCrit).verdict == Verdict::kAdmitted) ++admitted;
  }
  return admitted;
}

TEST(LeaseQueueTest, ValidatesTheFleetOptionsNamingTheField) {
  PerCallerLimits::Options o = FleetOptions(100, 10, 2);
  EXPECT_TRUE(PerCallerLimits::Validate(o).ok());  // a fleet rate alone is a limit
  o.fleet->expected_replicas = 0;
  EXPECT_THAT(PerCallerLimits::Validate(o).message(),
              HasSubstr("fleet.expectedReplicas: must be in [1, 10000], got 0"));
}

TEST(LeaseQueueTest, StoreNamesArePrefixAndStoredKeyAndTheDefaultBucketsCannotClash) {
  SimulatedClock clock;
  auto server = Make(FleetOptions(100, 10, 2), clock);
  EXPECT_EQ(server->FleetKey("tenant-a"), "grpc_resilience:Get:caller:tenant-a");
  EXPECT_EQ(server->FleetKey(""), "grpc_resilience:Get:caller:#default");
  FakeStore store(clock);
  Offer(*server, "tenant-a", 1);
  Offer(*server, "", 1);
  const std::string junk(300, '\x01');  // hashed: the store never sees client bytes
  Offer(*server, junk, 1);
  Drain({server.get()}, store.AsStore());
  EXPECT_THAT(store.keys_asked,
              ::testing::UnorderedElementsAre(
                  "grpc_resilience:Get:caller:tenant-a", "grpc_resilience:Get:caller:#default",
                  "grpc_resilience:Get:caller:" + PerCallerLimits::HashedKey(junk)));
}

TEST(LeaseQueueTest, ANewKeyAdmitsItsLocalShareUntilItsFirstLeaseReturns) {
  SimulatedClock clock;
  // 100/s and a burst of 10 for the fleet, 2 replicas: 50/s, burst 5 each.
  auto server = Make(FleetOptions(100, 10, 2), clock);
  FakeStore store(clock);
  // No lease yet: the key's local share, never a wait for the store.
  EXPECT_EQ(Offer(*server, "tenant-a", 20), 5);
  EXPECT_EQ(server->rejected_fleet_rate(), 15);
  EXPECT_EQ(server->fleet_queue()->pending(), 1u);  // queued once for 20 calls
  Drain({server.get()}, store.AsStore());
  EXPECT_EQ(store.round_trips, 1);
  // The lease: up to MaxLease() = 10 tokens of the fleet's bucket.
  EXPECT_GT(Offer(*server, "tenant-a", 20), 0);
  const GlobalRateLimiterStats stats = server->FleetStats();
  EXPECT_EQ(stats.admitted_local, 5);
  EXPECT_GT(stats.admitted_leased, 0);
}

// Two servers, two tenants, one store: each tenant is held to its own rate
// across both servers, and the flooding one takes nothing from the other.
TEST(LeaseQueueTest, EachTenantGetsItsFleetRateAcrossServersWhateverTheOtherDoes) {
  SimulatedClock clock;
  const double rate = 100;
  const int64_t burst = 10;
  auto a = Make(FleetOptions(rate, burst, 2), clock);
  auto b = Make(FleetOptions(rate, burst, 2), clock);
  FakeStore store(clock);
  const LeaseQueue::Store serve = store.AsStore();
  int64_t flood = 0;
  int64_t quiet = 0;
  int64_t quiet_offered = 0;
  const int steps = 10'000;  // 10 s of 1 ms
  for (int ms = 0; ms < steps; ++ms) {
    // The flood: 10 calls per ms at each server (20x its rate).
    flood += Offer(*a, "flood", 10) + Offer(*b, "flood", 10);
    // The quiet tenant: 30/s at each server, 60 % of its rate.
    if (ms % 33 == 0) {
      quiet += Offer(*a, "quiet", 1) + Offer(*b, "quiet", 1);
      quiet_offered += 2;
    }
    Drain({a.get(), b.get()}, serve);
    clock.AdvanceTime(absl::Milliseconds(1));
  }
  const double seconds = steps / 1000.0;
  // Every leased token was granted by the store: rate x time + burst, plus
  // what each server admitted before its first lease (its local burst, 5).
  EXPECT_LE(flood, static_cast<int64_t>(rate * seconds) + burst + 2 * 5);
  EXPECT_GE(flood, static_cast<int64_t>(0.95 * rate * seconds));
  // The quiet tenant lost nothing to the flood.
  EXPECT_EQ(quiet, quiet_offered);
}

TEST(LeaseQueueTest, StoreDownEveryKeyOnItsLocalShareLoggedOnceThenBackToTheFleetLimit) {
  SimulatedClock clock;
  std::vector<std::string> log;
  const double rate = 100;
  auto server = Make(FleetOptions(rate, 10, 2, &log), clock);
  FakeStore store(clock);
  const LeaseQueue::Store serve = store.AsStore();
  const std::vector<std::string> keys = {"t1", "t2", "t3", "t4", "t5"};
  // A flood from five tenants: 2 s up, 3 s down, 2 s up again.
  std::map<int, int64_t> admitted_per_phase;
  int64_t new_key_down = 0;
  for (int ms = 0; ms < 7000; ++ms) {
    store.up = ms < 2000 || ms >= 5000;
    const int phase = ms < 2000 ? 0 : ms < 5000 ? 1 : 2;
    for (const std::string& k : keys) admitted_per_phase[phase] += Offer(*server, k, 2);
    if (phase == 1) new_key_down += Offer(*server, "new", 2);
    Drain({server.get()}, serve);
    clock.AdvanceTime(absl::Milliseconds(1));
  }
  // One line for the outage and one for the recovery, not one per key.
  ASSERT_EQ(log.size(), 2u) << ::testing::PrintToString(log);
  EXPECT_THAT(log[0], HasSubstr("store unreachable (connection refused (127.0.0.1:6379))"));
  EXPECT_THAT(log[0], HasSubstr("'grpc_resilience:Get:caller:*' at 127.0.0.1:6379"));
  EXPECT_THAT(log[1], HasSubstr("store reachable again"));
  EXPECT_EQ(server->fleet_queue()->outages(), 1);
  EXPECT_EQ(server->fleet_queue()->recoveries(), 1);
  EXPECT_TRUE(server->fleet_queue()->store_up());
  const GlobalRateLimiterStats stats = server->FleetStats();
  EXPECT_EQ(stats.fallbacks, 6);   // each key went to its local share...
  EXPECT_EQ(stats.recoveries, 6);  // ...and came back
  // Up: this server alone takes each key's whole fleet rate (5 keys x 100/s
  // x 2 s, + bursts). Down: each key's local share, which is the share it
  // was seen to take (here all of it, as GlobalRateLimiter keeps it), plus
  // the leased tokens it still held (at most one lease of 10).
  EXPECT_NEAR(admitted_per_phase[0], 5 * rate * 2, 5 * 10 + 5 * 5);
  EXPECT_NEAR(admitted_per_phase[1], 5 * rate * 3, 5 * 10 + 5 * 10);
  EXPECT_NEAR(admitted_per_phase[2], 5 * rate * 2, 5 * 10 + 5 * 5);
  // A key first seen during the outage: the even split, 100/s over 2
  // expected replicas, and no round trip until the next attempt.
  EXPECT_NEAR(new_key_down, rate / 2 * 3, 5 + 1);
  // Down, the keys waited out the backoff instead of a round trip each per
  // call: a few per second, not thousands.
  EXPECT_LT(server->fleet_queue()->lease_failures(), 5 * 3 * 25);
}

TEST(LeaseQueueTest, EvictedKeysTakeTheirFleetBucketsAndPendingLeasesWithThem) {
  SimulatedClock clock;
  PerCallerLimits::Options o = FleetOptions(100, 10, 1);
  o.max_keys = 2;
  auto server = Make(o, clock);
  FakeStore store(clock);
  Offer(*server, "k1", 20);  // queued
  Offer(*server, "k2", 20);  // queued
  Offer(*server, "k3", 20);  // evicts k1: its queue entry is dropped with it
  EXPECT_EQ(server->keys_tracked(), 2);
  EXPECT_EQ(server->evicted(), 1);
  Drain({server.get()}, store.AsStore());
  EXPECT_THAT(store.keys_asked, ::testing::ElementsAre("grpc_resilience:Get:caller:k2",
                                                       "grpc_resilience:Get:caller:k3"));
  // The evicted key's counters stay in the sums: 3 keys x a local burst of 10.
  EXPECT_EQ(server->FleetStats().admitted_local, 30);
}

TEST(LeaseQueueTest, ADryKeyWaitsForItsBucketWithoutHoldingUpTheOthers) {
  SimulatedClock clock;
  auto server = Make(FleetOptions(100, 10, 1), clock);
  FakeStore store(clock);
  const LeaseQueue::Store serve = store.AsStore();
  // Drain "dry"'s fleet bucket: 50 calls a millisecond against 100/s.
  for (int ms = 0; ms < 100 && server->fleet_queue()->pending() == 0; ++ms) {
    Offer(*server, "dry", 50);
    Drain({server.get()}, serve);
    clock.AdvanceTime(absl::Milliseconds(1));
  }
  ASSERT_EQ(server->fleet_queue()->pending(), 1u);  // waiting for its bucket
  const int64_t trips = store.round_trips;
  // However many calls wake it meanwhile, it waits DryWait() (one token: 10
  // ms) before asking again, and the other keys are served at once.
  Offer(*server, "dry", 50);
  Offer(*server, "other", 1);
  Drain({server.get()}, serve);
  EXPECT_EQ(store.round_trips, trips + 1);
  EXPECT_EQ(store.keys_asked.back(), "grpc_resilience:Get:caller:other");
  clock.AdvanceTime(absl::Milliseconds(15));
  Drain({server.get()}, serve);
  EXPECT_EQ(store.round_trips, trips + 2);
  EXPECT_EQ(store.keys_asked.back(), "grpc_resilience:Get:caller:dry");
}

// Calls on four threads while a worker thread serves the queue (the clock
// stands still, so only leased tokens and each key's local burst can admit):
// never more admitted than the store granted plus the local bursts, every
// key's queue entry served. Run under ThreadSanitizer by scripts/test.sh
// --tsan.
// A stopped queue (its table is going: ~LeaseQueue, a policy update or a
// shutdown) serves none of the keys still queued: the Redis worker's turn
// would otherwise lease up to 64 of them, tokens the fleet loses, while the
// table's destructor waits for the turn to end (64 round trips of a slow
// Redis, up to 10 s each).
TEST(LeaseQueueTest, AStoppedQueueServesNoMoreKeys) {
  SimulatedClock clock;
  auto server = Make(FleetOptions(100, 10, 2), clock);
  FakeStore store(clock);
  for (const char* key : {"k1", "k2", "k3"}) Offer(*server, key, 1);
  ASSERT_EQ(server->fleet_queue()->pending(), 3u);
  server->fleet_queue()->Stop();
  EXPECT_FALSE(server->fleet_queue()->ServeOne(store.AsStore()));
  EXPECT_EQ(store.round_trips, 0);
}

TEST(LeaseQueueTest, CallsOnManyThreadsNeverAdmitMoreThanTheStoreGranted) {
  SimulatedClock clock;
  PerCallerLimits::Options o = FleetOptions(1000, 100, 1);
  o.max_keys = 3;  // 6 keys: evictions while leases are in flight
  auto server = Make(o, clock);
  FakeStore store(clock);
  std::atomic<int64_t> granted{0};
  const LeaseQueue::Store fake = store.AsStore();
  const LeaseQueue::Store counted = [&](const KeyedLease& key,
                                        int64_t want) -> absl::StatusOr<LeaseGrant> {
    absl::StatusOr<LeaseGrant> grant = fake(key, want);
    if (grant.ok()) granted += grant->granted;
    return grant;
  };
  std::atomic<bool> done{false};
  std::thread worker([&] {
    while (!done.load()) {
      server->fleet_queue()->Wait(absl::Milliseconds(1));
      while (server->fleet_queue()->ServeOne(counted)) {
      }
    }
  });
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 20'000; ++i) {
        const std::string key = "k" + std::to_string((i + t) % 6);
        if (server->TryAcquire(key, kShares, kCrit).verdict == Verdict::kAdmitted) ++admitted;
      }
    });
  }
  for (std::thread& c : callers) c.join();
  done = true;
  worker.join();
  const GlobalRateLimiterStats stats = server->FleetStats();
  EXPECT_EQ(stats.admitted_leased + stats.admitted_local, admitted.load());
  EXPECT_LE(stats.admitted_leased, granted.load());
  // Each key's local burst (100) at most, each time it was tracked anew.
  EXPECT_LE(stats.admitted_local, 100 * (6 + server->evicted()));
  // A store that never refills: at most its 6 buckets' bursts, per bucket.
  EXPECT_LE(granted.load(), 6 * 100);
}

}  // namespace
}  // namespace resilience
