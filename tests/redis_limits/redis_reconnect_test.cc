// The fleet-wide limit's Redis clients across Redis restarts, against a
// real redis-server the test kills and starts again: every reconnect path
// (a round trip on a connection Redis reset, connects refused while it is
// down, the connect after it is back) leaves the process with the file
// descriptors it had. Counted in /proc/self/fd, at the same state each
// time (Redis up, the client connected). Real time: loops bounded.

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/redis_limits/redis_lease_client.h"
#include "tests/global_limits/global_limit_testing.h"
#include "tests/redis_limits/trickle_proxy.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::Make;
using ::resilience::testing::Settings;
using Mode = GlobalRateLimiter::Mode;

constexpr int kRestarts = 5;

// The process's open file descriptors, and which ("4 -> socket:[123]").
std::string OpenFds(int* count) {
  *count = 0;
  std::string listing;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return "cannot read /proc/self/fd";
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name == std::to_string(own)) continue;
    char target[256] = {};
    const std::string path = "/proc/self/fd/" + name;
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    absl::StrAppend(&listing, name, " -> ", n > 0 ? target : "?", "\n");
    ++*count;
  }
  closedir(dir);
  return listing;
}

class RedisReconnectTest : public testing::RedisTest {};

// One client, driven by hand: a lease, Redis killed (the next lease fails
// on the reset connection, two more on refused connects), Redis back, a
// lease again; five times.
TEST_F(RedisReconnectTest, LeaseClientKeepsItsFileDescriptorsAcrossRestarts) {
  RedisLeaseClient::Options o;
  o.host = "127.0.0.1";
  o.port = redis_->port();
  o.timeout = absl::Seconds(1);
  RedisLeaseClient client(o);
  RedisLeaseClient::BlockSigpipe();
  ASSERT_TRUE(client.Lease("fd", 100, 10, 1, false).ok());
  int before = 0;
  const std::string listing_before = OpenFds(&before);
  for (int i = 0; i < kRestarts; ++i) {
    SCOPED_TRACE(absl::StrCat("restart ", i));
    redis_->Kill();
    for (int failed = 0; failed < 3; ++failed) {
      EXPECT_FALSE(client.Lease("fd", 100, 10, 1, true).ok());
      RedisLeaseClient::DropPendingSigpipe();
    }
    EXPECT_FALSE(client.connected());
    ASSERT_TRUE(redis_->Restart().ok());
    ASSERT_TRUE(client.Lease("fd", 100, 10, 1, true).ok());
  }
  int after = 0;
  const std::string listing_after = OpenFds(&after);
  EXPECT_EQ(after, before) << "before:\n" << listing_before << "after:\n" << listing_after;
}

// A "Redis" that accepts connections (the kernel's backlog) and never
// answers: each lease connects, times out on SCRIPT LOAD and drops the
// connection; five of them leave no descriptor behind.
TEST(RedisReconnectSilentTest, TimedOutRoundTripsLeaveNoFileDescriptorBehind) {
  int port = 0;
  absl::StatusOr<int> listening = testing::ListenOnLoopback(&port);
  ASSERT_TRUE(listening.ok()) << listening.status();
  RedisLeaseClient::Options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = absl::Milliseconds(100);
  RedisLeaseClient client(o);
  int before = 0;
  const std::string listing_before = OpenFds(&before);
  for (int i = 0; i < kRestarts; ++i) {
    const absl::StatusOr<LeaseScript::Reply> lease = client.Lease("fd", 100, 10, 1, false);
    EXPECT_EQ(lease.status().code(), absl::StatusCode::kDeadlineExceeded) << lease.status();
    EXPECT_FALSE(client.connected());
  }
  int after = 0;
  const std::string listing_after = OpenFds(&after);
  EXPECT_EQ(after, before) << "before:\n" << listing_before << "after:\n" << listing_after;
  close(*listening);
}

// A GlobalRateLimit under load (its lease thread reconnecting with backoff)
// through five restarts, each with a second of failed connects: the same
// descriptors once it is global again.
TEST_F(RedisReconnectTest, GlobalLimitKeepsItsFileDescriptorsAcrossRestarts) {
  auto limit = Make(Settings(redis_->port(), 1000, 10, "fds"));
  const auto mode_becomes = [&](Mode mode) {
    return Eventually([&] {
      limit->TryAcquire(nullptr);
      return limit->limiter().mode() == mode;
    }, absl::Seconds(10));
  };
  ASSERT_TRUE(mode_becomes(Mode::kGlobal));
  int before = 0;
  const std::string listing_before = OpenFds(&before);
  for (int i = 0; i < kRestarts; ++i) {
    SCOPED_TRACE(absl::StrCat("restart ", i));
    redis_->Kill();
    ASSERT_TRUE(mode_becomes(Mode::kLocal));
    const absl::Time down_until = absl::Now() + absl::Seconds(1);
    while (absl::Now() < down_until) {
      limit->TryAcquire(nullptr);
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_TRUE(redis_->Restart().ok());
    ASSERT_TRUE(mode_becomes(Mode::kGlobal));
  }
  int after = 0;
  const std::string listing_after = OpenFds(&after);
  EXPECT_EQ(after, before) << "before:\n" << listing_before << "after:\n" << listing_after;
}

}  // namespace
}  // namespace resilience
