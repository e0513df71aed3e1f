// throttle.global's Redis AUTH fields: the password comes from an
// environment variable or a file the policy names, never from the policy
// itself; what cannot be read is a load error naming the field's path and
// the variable or file, never the password.

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPath[] = "methodConfig[0].throttle.global";

absl::StatusOr<PolicyTable> LoadGlobal(const std::string& auth) {
  static const MethodCatalog* const methods =
      new MethodCatalog({{"cache.v1.CacheService", "Get"}, {"cache.v1.CacheService", "Store"}});
  PolicyTable::LoadOptions options;
  options.methods = methods;
  return PolicyTable::FromJsonString(
      absl::StrCat(R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService"}],)",
                   R"("throttle":{"global":{"redis":"127.0.0.1:6379","ratePerSecond":10,)",
                   R"("expectedReplicas":2)", auth, "}}}]}"),
      options);
}

const GlobalThrottleSettings& Global(const PolicyTable& set) {
  return *set.Find("/cache.v1.CacheService/Get").policy->throttle->global;
}

// A file in the test's temporary directory holding `text`; its path.
std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

TEST(GlobalThrottleAuthPolicyTest, PasswordFromAnEnvironmentVariable) {
  ASSERT_EQ(setenv("GLOBAL_AUTH_TEST_PW", "env-secret-1", 1), 0);
  absl::StatusOr<PolicyTable> set = LoadGlobal(R"(,"passwordEnv":"GLOBAL_AUTH_TEST_PW")");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(Global(*set).password_env, "GLOBAL_AUTH_TEST_PW");
  EXPECT_EQ(Global(*set).path, kPath);
  EXPECT_EQ(ReadGlobalThrottlePassword(Global(*set)).value_or(""), "env-secret-1");
  unsetenv("GLOBAL_AUTH_TEST_PW");
}

TEST(GlobalThrottleAuthPolicyTest, AclUserAndPasswordFromAFile) {
  const std::string file = TempFile("redis-pw", "file-secret-2\n");  // as `echo` writes it
  absl::StatusOr<PolicyTable> set =
      LoadGlobal(absl::StrCat(R"(,"username":"fleet","passwordFile":")", file, "\""));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(Global(*set).username, "fleet");
  EXPECT_EQ(ReadGlobalThrottlePassword(Global(*set)).value_or(""), "file-secret-2");
  // Read again each time: a rotated file is seen.
  TempFile("redis-pw", "file-secret-3");
  EXPECT_EQ(ReadGlobalThrottlePassword(Global(*set)).value_or(""), "file-secret-3");
}

TEST(GlobalThrottleAuthPolicyTest, UnreadableSourcesAreLoadErrorsNamingPathAndSource) {
  unsetenv("GLOBAL_AUTH_TEST_UNSET");
  absl::StatusOr<PolicyTable> set = LoadGlobal(R"(,"passwordEnv":"GLOBAL_AUTH_TEST_UNSET")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr(absl::StrCat(kPath, ".passwordEnv: environment variable "
                                            "GLOBAL_AUTH_TEST_UNSET is not set")));
  ASSERT_EQ(setenv("GLOBAL_AUTH_TEST_EMPTY", "", 1), 0);
  set = LoadGlobal(R"(,"passwordEnv":"GLOBAL_AUTH_TEST_EMPTY")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("GLOBAL_AUTH_TEST_EMPTY is empty"));
  set = LoadGlobal(R"(,"passwordFile":"/nonexistent/redis-password")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr(absl::StrCat(kPath, R"(.passwordFile: "/nonexistent/redis-password": )",
                                     "cannot open: No such file or directory")));
  // A file far too long for a password: refused without quoting it.
  const std::string big = TempFile("not-a-password", std::string(5000, 'x') + "secret-tail");
  set = LoadGlobal(absl::StrCat(R"(,"passwordFile":")", big, "\""));
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("over 4096 bytes"));
  EXPECT_THAT(set.status().message(), Not(HasSubstr("secret-tail")));
  EXPECT_THAT(set.status().message(), Not(HasSubstr("xxxx")));
}

TEST(GlobalThrottleAuthPolicyTest, MalformedFieldsAreLoadErrors) {
  absl::StatusOr<PolicyTable> set =
      LoadGlobal(R"(,"passwordEnv":"A","passwordFile":"/etc/redis-pw")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr(absl::StrCat(kPath, ".passwordEnv and ", kPath,
                                     ".passwordFile: set at most one")));
  set = LoadGlobal(R"(,"passwordEnv":"1BAD-NAME")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr(absl::StrCat(kPath, ".passwordEnv: must be")));
  set = LoadGlobal(R"(,"username":"fleet")");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr(absl::StrCat(kPath, ".username: needs passwordEnv or passwordFile")));
}

}  // namespace
}  // namespace resilience
