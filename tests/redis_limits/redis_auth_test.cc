// throttle.global against a redis-server that requires a password
// (--requirepass) or an ACL user: the password from an environment
// variable or a file, a wrong one refused with a clear, counted, logged
// fallback to the local share that never shows the secret, and a password
// changed on the server while running (then rotated in the file).

#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/global_limits/global_limit_testing.h"
#include "tests/testing/eventually.h"
#include "tests/testing/redis_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::Make;
using ::resilience::testing::Offer;
using ::resilience::testing::RedisServer;
using ::resilience::testing::Settings;
using ::testing::HasSubstr;
using ::testing::Not;
using Mode = GlobalRateLimiter::Mode;

constexpr char kAdminPassword[] = "admin-pw-7c1e";
constexpr char kFleetPassword[] = "fleet-pw-93ab";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

class RedisAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The default user needs kAdminPassword; user "fleet" has its own.
    RedisServer::Options options;
    options.password = kAdminPassword;
    // redis-server quotes an argument with spaces: the rule's words apart.
    options.args = {"--user", "fleet", "on", absl::StrCat(">", kFleetPassword), "~*", "&*",
                    "+@all"};
    auto redis = RedisServer::Start(REDIS_SERVER_PATH, options);
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
  }
  GlobalThrottleSettings Base(const std::string& key) {
    GlobalThrottleSettings s = Settings(redis_->port(), 100, 10, key);
    s.timeout = absl::Seconds(1);  // a loaded machine: this is not about timeouts
    return s;
  }
  std::unique_ptr<RedisServer> redis_;
};

TEST_F(RedisAuthTest, PasswordFromEnvironmentVariable) {
  ASSERT_EQ(setenv("REDIS_AUTH_TEST_PW", kAdminPassword, 1), 0);
  GlobalThrottleSettings s = Base("env");
  s.password_env = "REDIS_AUTH_TEST_PW";
  auto limit = Make(s);
  ASSERT_TRUE(Eventually([&] { return limit->limiter().mode() == Mode::kGlobal; },
                         absl::Seconds(5)));
  EXPECT_GT(Offer(*limit, 100, absl::Milliseconds(300)), 0);
  EXPECT_EQ(limit->limiter().Stats().lease_failures, 0);
  EXPECT_EQ(limit->limiter().Stats().admitted_local, 0);
  unsetenv("REDIS_AUTH_TEST_PW");
}

TEST_F(RedisAuthTest, AclUserWithPasswordFromFile) {
  GlobalThrottleSettings s = Base("acl");
  s.username = "fleet";
  s.password_file = WriteFile("fleet-pw", absl::StrCat(kFleetPassword, "\n"));
  auto limit = Make(s);
  ASSERT_TRUE(Eventually([&] { return limit->limiter().mode() == Mode::kGlobal; },
                         absl::Seconds(5)));
  EXPECT_EQ(limit->limiter().Stats().lease_failures, 0);
  // The lease's connection is the ACL user's.
  absl::StatusOr<std::string> clients = redis_->Command({"CLIENT", "LIST"});
  ASSERT_TRUE(clients.ok()) << clients.status();
  EXPECT_THAT(*clients, HasSubstr("user=fleet"));
}

// A wrong password: the local share (counted, one line naming the policy
// path, the user and the password's source, and Redis's refusal), never
// the secret in the log.
TEST_F(RedisAuthTest, WrongPasswordFallsBackToTheLocalShareAndSaysWhy) {
  GlobalThrottleSettings s = Base("wrong");
  s.username = "fleet";
  s.password_file = WriteFile("wrong-pw", "wrong-secret-5d2f");
  ::testing::internal::CaptureStderr();
  auto limit = Make(s);
  const bool local = Eventually([&] { return limit->limiter().mode() == Mode::kLocal; },
                                absl::Seconds(5));
  const int64_t admitted = Offer(*limit, 100, absl::Milliseconds(500));
  limit.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(local);
  EXPECT_GT(admitted, 0);  // the local share of 50/s
  EXPECT_THAT(log, HasSubstr("(methodConfig[0].throttle.global): store unreachable (AUTH as "
                             "user 'fleet' with the password of "
                             "methodConfig[0].throttle.global.passwordFile"));
  EXPECT_THAT(log, HasSubstr("WRONGPASS"));
  EXPECT_THAT(log, Not(HasSubstr("wrong-secret-5d2f")));
}

// No password in the policy, one on the server: Redis's NOAUTH, and a hint.
TEST_F(RedisAuthTest, MissingPasswordIsExplained) {
  ::testing::internal::CaptureStderr();
  auto limit = Make(Base("none"));
  const bool local = Eventually([&] { return limit->limiter().mode() == Mode::kLocal; },
                                absl::Seconds(5));
  limit.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(local);
  EXPECT_THAT(log, HasSubstr("NOAUTH"));
  EXPECT_THAT(log, HasSubstr("the policy sets neither passwordEnv nor passwordFile"));
}

// The password changed on the server while running: connections already
// authenticated go on, so the change shows at the next connect (here its
// connection is killed): the local share, counted and logged. The file
// rotated to the new password: back to the global limit, no restart.
TEST_F(RedisAuthTest, PasswordChangedWhileRunningThenRotatedInTheFile) {
  GlobalThrottleSettings s = Base("rotate");
  s.password_file = WriteFile("rotate-pw", kAdminPassword);
  ::testing::internal::CaptureStderr();
  auto limit = Make(s);
  ASSERT_TRUE(Eventually([&] { return limit->limiter().mode() == Mode::kGlobal; },
                         absl::Seconds(5)));
  ASSERT_TRUE(redis_->Command({"CONFIG", "SET", "requirepass", "changed-pw-41"}).ok());
  redis_->set_password("changed-pw-41");
  ASSERT_TRUE(redis_->Command({"CLIENT", "KILL", "TYPE", "normal"}).ok());
  // The reset, then the old password refused at the reconnect.
  const bool local = Eventually([&] {
    limit->TryAcquire(nullptr);
    return limit->limiter().mode() == Mode::kLocal &&
           limit->limiter().Stats().lease_failures >= 2;
  }, absl::Seconds(5));
  const int64_t failures = limit->limiter().Stats().lease_failures;
  WriteFile("rotate-pw", "changed-pw-41");
  const bool back = Eventually([&] {
    limit->TryAcquire(nullptr);
    return limit->limiter().mode() == Mode::kGlobal;
  }, absl::Seconds(5));
  limit.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(local);
  EXPECT_GE(failures, 2);
  EXPECT_TRUE(back);
  EXPECT_THAT(log, HasSubstr("still on the local share: AUTH with the password of "
                             "methodConfig[0].throttle.global.passwordFile"));
  EXPECT_THAT(log, HasSubstr("WRONGPASS"));
  EXPECT_THAT(log, HasSubstr("store reachable again"));
  EXPECT_THAT(log, Not(HasSubstr(kAdminPassword)));
  EXPECT_THAT(log, Not(HasSubstr("changed-pw-41")));
}

}  // namespace
}  // namespace resilience
