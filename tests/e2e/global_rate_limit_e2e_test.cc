// The fleet-wide rate limit end to end: Debian's redis-server on a free
// loopback port, three cache_server processes with one throttle.global
// policy, and clients in this process offering 3x the global rate unevenly
// (70/20/10%). Then Redis is killed mid-run and started again.
//
//   [0s, 10s)   Redis up: admitted = rate x 10s + burst, within 5%.
//   10s         Redis killed (SIGKILL).
//   [10.5s, 14s) each server admits at its local share; no call waits.
//   14s         Redis started again (empty) on the same port.
//   [17s, 20s)  the global limit holds again: rate x 3s, within 15%.
// Every call of the run ends within its deadline, and each server logs
// exactly one line per transition.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/subprocess.h"

namespace resilience {
namespace {

using ::resilience::testing::RedisServer;
using ::resilience::testing::Subprocess;

constexpr double kRate = 100;
constexpr int kBurst = 50;
constexpr int kServers = 3;
// 3x the rate, 70/20/10% across the servers.
constexpr std::array<double, kServers> kOffered = {210, 60, 30};
constexpr absl::Duration kDeadline = absl::Seconds(1);
constexpr absl::Duration kRun = absl::Seconds(20);
constexpr absl::Duration kKillAt = absl::Seconds(10);
constexpr absl::Duration kRestartAt = absl::Seconds(14);

struct Call {
  absl::Duration at;       // since the run started
  absl::Duration latency;
  grpc::StatusCode code;
};

class ServerProcess {
 public:
  // cache_server with `policy`, its stderr to `log` (a pipe nobody read
  // would fill up).
  ServerProcess(const std::string& policy, const std::string& log) : log_(log) {
    absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(
        {"/bin/sh", "-c",
         absl::StrCat("exec '", CACHE_SERVER_PATH, "' --policy='", policy, "' 2>'", log, "'")});
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return;
    process_ = *std::move(p);
    std::optional<std::string> line = process_->ReadLine(absl::Seconds(10));
    EXPECT_TRUE(line.has_value() && absl::StartsWith(*line, "listening on "));
    if (line) target_ = std::string(absl::StripPrefix(*line, "listening on "));
  }
  const std::string& target() const { return target_; }
  // Stops it (SIGTERM, then reaped) and returns what it logged.
  std::string StopAndLog() {
    if (process_ != nullptr) {
      process_->Signal(SIGTERM);
      process_->Finish("", absl::Seconds(10));
    }
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  const std::string log_;
  std::unique_ptr<Subprocess> process_;
  std::string target_;
};

// Gets at `per_second` (a fixed schedule, caught up when behind) until
// `run` has passed since `start`, as caller `tenant` (the x-tenant-id
// header; none when empty).
std::vector<Call> Load(const std::string& target, double per_second, absl::Time start,
                       absl::Duration run, const std::string& tenant = "") {
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  std::vector<Call> calls;
  cache::v1::GetReq request;
  request.set_key("k");
  for (int64_t i = 0;; ++i) {
    const absl::Time at = start + absl::Seconds(static_cast<double>(i) / per_second);
    if (at >= start + run) break;
    const absl::Duration wait = at - absl::Now();
    if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kDeadline));
    if (!tenant.empty()) context.AddMetadata("x-tenant-id", tenant);
    cache::v1::GetResp response;
    const absl::Time sent = absl::Now();
    const grpc::Status status = stub->Get(&context, request, &response);
    calls.push_back({sent - start, absl::Now() - sent, status.error_code()});
  }
  return calls;
}

bool Admitted(grpc::StatusCode code) {
  // The handler ran: the value, or no such key.
  return code == grpc::StatusCode::OK || code == grpc::StatusCode::NOT_FOUND;
}

int64_t AdmittedIn(const std::vector<Call>& calls, absl::Duration from, absl::Duration to) {
  return std::count_if(calls.begin(), calls.end(), [&](const Call& c) {
    return c.at >= from && c.at < to && Admitted(c.code);
  });
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(GlobalRateLimitE2eTest, FleetHoldsTheGlobalRateAndSurvivesRedisOutage) {
  auto redis = RedisServer::Start(REDIS_SERVER_PATH);
  ASSERT_TRUE(redis.ok()) << redis.status();
  const std::string policy = ::testing::TempDir() + "/global_policy.json";
  std::ofstream(policy) << absl::StrCat(
      R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService"}],"throttle":{"global":)",
      R"({"redis":")", (*redis)->address(), R"(","key":"e2e:)", getpid(),
      R"(","ratePerSecond":)", kRate, R"(,"burst":)", kBurst,
      R"(,"expectedReplicas":3,"timeout":"0.1s"}}}]})");
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < kServers; ++i) {
    servers.push_back(std::make_unique<ServerProcess>(
        policy, absl::StrCat(::testing::TempDir(), "/global_server_", i, ".log")));
    ASSERT_FALSE(servers.back()->target().empty());
  }
  // The servers' limits are made on their first call: one each, then time
  // for their first lease and for the fleet's bucket to fill again.
  for (auto& s : servers) Load(s->target(), 10, absl::Now(), absl::Milliseconds(100));
  absl::SleepFor(absl::Milliseconds(1500));

  const absl::Time start = absl::Now();
  std::array<std::vector<Call>, kServers> calls;
  std::vector<std::thread> clients;
  for (int i = 0; i < kServers; ++i) {
    clients.emplace_back([&, i] { calls[i] = Load(servers[i]->target(), kOffered[i], start, kRun); });
  }
  absl::SleepFor(start + kKillAt - absl::Now());
  (*redis)->Kill();
  absl::SleepFor(start + kRestartAt - absl::Now());
  const absl::Status restarted = (*redis)->Restart();
  for (auto& t : clients) t.join();
  ASSERT_TRUE(restarted.ok()) << restarted;

  // 1. With Redis: rate x time + burst, within 5%.
  const double expected = kRate * absl::ToDoubleSeconds(kKillAt) + kBurst;
  int64_t with_redis = 0;
  for (const auto& c : calls) with_redis += AdmittedIn(c, absl::ZeroDuration(), kKillAt);
  EXPECT_NEAR(static_cast<double>(with_redis), expected, expected * 0.05)
      << "admitted by server: " << AdmittedIn(calls[0], absl::ZeroDuration(), kKillAt) << ", "
      << AdmittedIn(calls[1], absl::ZeroDuration(), kKillAt) << ", "
      << AdmittedIn(calls[2], absl::ZeroDuration(), kKillAt);

  // 2. No call waited on Redis: every one answered within its deadline.
  absl::Duration slowest;
  int64_t total_calls = 0;
  for (const auto& c : calls) {
    for (const Call& call : c) {
      slowest = std::max(slowest, call.latency);
      ++total_calls;
      EXPECT_NE(call.code, grpc::StatusCode::DEADLINE_EXCEEDED) << absl::FormatDuration(call.at);
    }
  }
  EXPECT_LT(slowest, kDeadline);
  EXPECT_GT(total_calls, 5000);

  // 3. Without Redis: every server still admits, at its local share; the
  // shares add up to about the global rate.
  const absl::Duration down_from = kKillAt + absl::Milliseconds(500);
  int64_t without_redis = 0;
  for (int i = 0; i < kServers; ++i) {
    const int64_t admitted = AdmittedIn(calls[i], down_from, kRestartAt);
    EXPECT_GT(admitted, 0) << "server " << i;
    without_redis += admitted;
  }
  const double down_expected = kRate * absl::ToDoubleSeconds(kRestartAt - down_from);
  EXPECT_NEAR(static_cast<double>(without_redis), down_expected, down_expected * 0.4);

  // 4. Redis back: the global limit again, within a few seconds.
  const absl::Duration back_from = kRestartAt + absl::Seconds(3);
  int64_t back = 0;
  for (const auto& c : calls) back += AdmittedIn(c, back_from, kRun);
  const double back_expected = kRate * absl::ToDoubleSeconds(kRun - back_from);
  EXPECT_NEAR(static_cast<double>(back), back_expected, back_expected * 0.15);

  // 5. One line per transition on each server's stderr.
  for (auto& s : servers) {
    const std::string log = s->StopAndLog();
    EXPECT_EQ(CountLines(log, "store unreachable"), 1) << log;
    EXPECT_EQ(CountLines(log, "reachable again"), 1) << log;
  }
  std::printf("admitted with Redis: %lld (expected %.0f), without: %lld (about %.0f), back: %lld "
              "(expected %.0f); slowest call %s\n",
              static_cast<long long>(with_redis), expected, static_cast<long long>(without_redis),
              down_expected, static_cast<long long>(back), back_expected,
              absl::FormatDuration(slowest).c_str());
}

// throttle.perCaller.global: three cache_server processes, one Redis, two
// tenants. Each tenant's rate holds across the fleet: the flooding one (3x
// its rate, 70/20/10% across the servers) gets its rate x time + burst, the
// quiet one (half its rate, evenly) everything it asks, whatever the flood.
TEST(GlobalRateLimitE2eTest, PerCallerFleetLimitHoldsEachTenantsRateAcrossTheFleet) {
  constexpr double kTenantRate = 40;
  constexpr int kTenantBurst = 20;
  constexpr std::array<double, kServers> kFlood = {84, 24, 12};
  constexpr std::array<double, kServers> kQuiet = {7, 7, 6};
  constexpr absl::Duration kTenantRun = absl::Seconds(8);
  auto redis = RedisServer::Start(REDIS_SERVER_PATH);
  ASSERT_TRUE(redis.ok()) << redis.status();
  const std::string policy = ::testing::TempDir() + "/per_caller_fleet_policy.json";
  std::ofstream(policy) << absl::StrCat(
      R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService"}],"throttle":{)",
      R"("perCaller":{"key":{"header":"x-tenant-id"},"global":{"redis":")",
      (*redis)->address(), R"(","key":"e2e-tenant:)", getpid(), R"(","ratePerSecond":)",
      kTenantRate, R"(,"burst":)", kTenantBurst, R"(,"expectedReplicas":3}}}}]})");
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < kServers; ++i) {
    servers.push_back(std::make_unique<ServerProcess>(
        policy, absl::StrCat(::testing::TempDir(), "/per_caller_fleet_server_", i, ".log")));
    ASSERT_FALSE(servers.back()->target().empty());
  }
  // Each key's first call on each server, its first lease, then time for
  // the tenants' buckets to fill again.
  for (auto& s : servers) {
    for (const char* tenant : {"flood", "quiet"}) {
      Load(s->target(), 10, absl::Now(), absl::Milliseconds(100), tenant);
    }
  }
  absl::SleepFor(absl::Milliseconds(1500));

  const absl::Time start = absl::Now();
  std::array<std::vector<Call>, kServers> flood, quiet;
  std::vector<std::thread> clients;
  for (int i = 0; i < kServers; ++i) {
    clients.emplace_back(
        [&, i] { flood[i] = Load(servers[i]->target(), kFlood[i], start, kTenantRun, "flood"); });
    clients.emplace_back(
        [&, i] { quiet[i] = Load(servers[i]->target(), kQuiet[i], start, kTenantRun, "quiet"); });
  }
  for (auto& t : clients) t.join();
  const absl::Duration all = kTenantRun + absl::Seconds(1);
  int64_t flood_admitted = 0, quiet_admitted = 0, quiet_offered = 0;
  absl::Duration slowest;
  for (int i = 0; i < kServers; ++i) {
    flood_admitted += AdmittedIn(flood[i], absl::ZeroDuration(), all);
    quiet_admitted += AdmittedIn(quiet[i], absl::ZeroDuration(), all);
    quiet_offered += static_cast<int64_t>(quiet[i].size());
    for (const Call& c : flood[i]) slowest = std::max(slowest, c.latency);
  }
  const double expected = kTenantRate * absl::ToDoubleSeconds(kTenantRun) + kTenantBurst;
  EXPECT_NEAR(static_cast<double>(flood_admitted), expected, expected * 0.08);
  EXPECT_GE(quiet_admitted, quiet_offered - 2);
  EXPECT_LT(slowest, kDeadline);
  for (auto& s : servers) {
    const std::string log = s->StopAndLog();
    EXPECT_EQ(CountLines(log, "store unreachable"), 0) << log;
  }
  std::printf("per-caller fleet limit %.0f/s (burst %d) per tenant, 3 servers, %.0f s: flood "
              "offered %.0f/s admitted %lld (expected %.0f); quiet offered %lld admitted %lld; "
              "slowest call %s\n",
              kTenantRate, kTenantBurst, absl::ToDoubleSeconds(kTenantRun),
              kFlood[0] + kFlood[1] + kFlood[2], static_cast<long long>(flood_admitted), expected,
              static_cast<long long>(quiet_offered), static_cast<long long>(quiet_admitted),
              absl::FormatDuration(slowest).c_str());
}

// A password Redis refuses is an error at the server's start (exit 2),
// naming the policy file, the entry's path and the password's source, never
// the password; the right one starts.
TEST(GlobalRateLimitE2eTest, RefusedRedisPasswordIsAnErrorAtStart) {
  RedisServer::Options options;
  options.password = "right-pw-e2e-8a";
  auto redis = RedisServer::Start(REDIS_SERVER_PATH, options);
  ASSERT_TRUE(redis.ok()) << redis.status();
  const std::string policy = ::testing::TempDir() + "/global_auth_policy.json";
  std::ofstream(policy) << absl::StrCat(
      R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService"}],"throttle":{"global":)",
      R"({"redis":")", (*redis)->address(), R"(","ratePerSecond":10,"expectedReplicas":1,)",
      R"("passwordEnv":"GLOBAL_E2E_REDIS_PW"}}}]})");
  const testing::CommandResult refused = testing::RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat("GLOBAL_E2E_REDIS_PW=wrong-pw-e2e-3c exec '", CACHE_SERVER_PATH,
                    "' --port=0 --policy='", policy, "'")},
      "", absl::Seconds(20));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_THAT(refused.err,
              ::testing::HasSubstr(absl::StrCat(
                  "methodConfig[0].throttle.global: AUTH with the password of "
                  "methodConfig[0].throttle.global.passwordEnv (GLOBAL_E2E_REDIS_PW) refused by ",
                  (*redis)->address(), ": WRONGPASS")));
  EXPECT_THAT(refused.err, ::testing::Not(::testing::HasSubstr("wrong-pw-e2e-3c")));
  ASSERT_EQ(setenv("GLOBAL_E2E_REDIS_PW", "right-pw-e2e-8a", 1), 0);
  ServerProcess server(policy, ::testing::TempDir() + "/global_auth_server.log");
  EXPECT_FALSE(server.target().empty());
  server.StopAndLog();
  unsetenv("GLOBAL_E2E_REDIS_PW");
}

}  // namespace
}  // namespace resilience
