// File: tests/policy/policy_set_test.cc
//
// The public PolicySet (include/grpc_resilience/policy.h): loading with and
// without strict mode, file errors, the empty set, and copies and moves
// sharing the table the library reads (PolicySetAccess). The loader's rules
// themselves are tested on PolicyTable (policy_table_test.cc and the others).

#include "grpc_resilience/policy.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/policy_set_access.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Only the default name ({}), which never warns whatever is linked.
constexpr char kDefaultOnly[] = R"json({
  "methodConfig": [{"name": [{}], "timeout": "1.5s",
                    "retryPolicy": {"maxAttempts": 3, "retryableStatusCodes": ["UNAVAILABLE"]}}]
})json";

// The same with a field of gRPC's service config that has no effect there.
constexpr char kOneWarning[] = R"json({
  "healthCheckConfig": {},
  "methodConfig": [{"name": [{}], "timeout": "1.5s"}]
})json";

TEST(PolicySetTest, LoadsAndTheLibrarySeesTheTable) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(kDefaultOnly);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->warnings().empty());
  const PolicyTable& table = PolicySetAccess::Table(*set);
  const MethodPolicy* p = table.Find("/any.Service/Method").policy;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->timeout, absl::Milliseconds(1500));
  ASSERT_TRUE(p->retry.has_value());
  EXPECT_EQ(p->retry->max_attempts, 3);
}

TEST(PolicySetTest, WarningsAreKeptAndStrictModeRefusesThem) {
  absl::StatusOr<PolicySet> lenient = PolicySet::FromJsonString(kOneWarning);
  ASSERT_TRUE(lenient.ok()) << lenient.status();
  ASSERT_EQ(lenient->warnings().size(), 1u);
  EXPECT_THAT(lenient->warnings()[0], StartsWith("healthCheckConfig: "));

  PolicySet::LoadOptions strict;
  strict.strict = true;
  absl::StatusOr<PolicySet> refused = PolicySet::FromJsonString(kOneWarning, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), StartsWith("strict mode: 1 warning(s): "));
  EXPECT_TRUE(PolicySet::FromJsonString(kDefaultOnly, strict).ok());
}

TEST(PolicySetTest, ErrorsNameThePathAndTheValue) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 0}}]})");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("got 0"));
}

TEST(PolicySetTest, FromJsonFile) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/policy_set_", getpid(), ".json");
  std::ofstream(path, std::ios::binary) << kDefaultOnly;
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_NE(PolicySetAccess::Table(*set).Find("/a.B/C").policy, nullptr);

  absl::StatusOr<PolicySet> missing = PolicySet::FromJsonFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              StartsWith(absl::StrCat("policy file \"", path, "\": ")));
}

TEST(PolicySetTest, EmptySetHasNoPolicyAndNoWarning) {
  const PolicySet empty;
  EXPECT_TRUE(empty.warnings().empty());
  EXPECT_EQ(PolicySetAccess::Table(empty).Find("/a.B/C").policy, nullptr);
  EXPECT_TRUE(PolicySetAccess::Table(empty).policies().empty());
}

// Copies and moves share the loaded table: a MethodPolicy found through one
// is the one found through the other, and it outlives the set it came from.
// A moved-from set keeps its policies.
TEST(PolicySetTest, CopiesAndMovesShareTheTable) {
  absl::StatusOr<PolicySet> loaded = PolicySet::FromJsonString(kDefaultOnly);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const MethodPolicy* found = PolicySetAccess::Table(*loaded).Find("/a.B/C").policy;
  PolicySet copy = *loaded;
  EXPECT_EQ(PolicySetAccess::Table(copy).Find("/a.B/C").policy, found);
  PolicySet moved = std::move(*loaded);
  EXPECT_EQ(PolicySetAccess::Table(moved).Find("/a.B/C").policy, found);
  loaded = PolicySet();
  EXPECT_EQ(PolicySetAccess::Table(copy).Find("/a.B/C").policy, found);
  EXPECT_EQ(found->timeout, absl::Milliseconds(1500));

  PolicySet source = copy;
  PolicySet target = std::move(source);
  EXPECT_EQ(PolicySetAccess::Table(target).Find("/a.B/C").policy, found);
  // NOLINTNEXTLINE(bugprone-use-after-move): what a moved-from set holds is specified.
  EXPECT_EQ(PolicySetAccess::Table(source).Find("/a.B/C").policy, found);
}

}  // namespace
}  // namespace resilience
