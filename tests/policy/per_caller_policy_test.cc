// throttle.perCaller: the key's source, the limits with their defaults, and
// errors naming the path and the value.

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/global_throttle_policy.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& throttle) {
  absl::StatusOr<PolicyTable> table = LoadThrottle(throttle);
  EXPECT_FALSE(table.ok()) << throttle;
  return std::string(table.status().message());
}

TEST(PerCallerPolicyTest, ReadsAHeaderKeyAndLimitsWithDefaults) {
  absl::StatusOr<PolicyTable> table = LoadThrottle(
      R"({"perCaller": {"key": {"header": "x-tenant-id"}, "maxConcurrency": 4,
                        "ratePerSecond": 50}})");
  ASSERT_TRUE(table.ok()) << table.status();
  const ThrottleSettings& t = *table->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.per_caller.has_value());
  EXPECT_EQ(t.per_caller->header, "x-tenant-id");
  EXPECT_EQ(t.per_caller->limits.max_concurrency, 4);
  EXPECT_EQ(t.per_caller->limits.rate_per_second, 50);
  EXPECT_EQ(t.per_caller->limits.burst, 50);  // one second's worth
  EXPECT_EQ(t.per_caller->limits.max_keys, 1000);
  // The throttle's other limits stay unset.
  EXPECT_EQ(t.max_concurrency, 0);
  EXPECT_EQ(t.rate_per_second, 0);
}

TEST(PerCallerPolicyTest, ReadsAFleetWideRatePerKeyWithThrottleGlobalsFieldsAndRules) {
  absl::StatusOr<PolicyTable> table = LoadThrottle(
      R"({"perCaller": {"key": {"header": "x-tenant-id"}, "maxKeys": 50,
                        "global": {"redis": "127.0.0.1:6379", "ratePerSecond": 40,
                                   "expectedReplicas": 3, "key": "shop:tenant"}}})");
  ASSERT_TRUE(table.ok()) << table.status();
  const ThrottleSettings& t = *table->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.per_caller.has_value());
  ASSERT_TRUE(t.per_caller->global.has_value());  // a fleet rate alone is a limit
  EXPECT_EQ(t.per_caller->global->path, "methodConfig[0].throttle.perCaller.global");
  EXPECT_EQ(t.per_caller->global->port, 6379);
  EXPECT_EQ(PerCallerFleetPrefix(*t.per_caller->global, "s.S/M"), "shop:tenant");
  ASSERT_TRUE(t.per_caller->limits.fleet.has_value());
  EXPECT_EQ(t.per_caller->limits.fleet->rate_per_second, 40);
  EXPECT_EQ(t.per_caller->limits.fleet->burst, 40);  // throttle.global's default
  EXPECT_EQ(t.per_caller->limits.fleet->expected_replicas, 3);
  EXPECT_EQ(t.per_caller->limits.max_concurrency, 0);
  EXPECT_EQ(t.per_caller->limits.rate_per_second, 0);
  // Without `key`: the scope's default key and ":caller".
  GlobalThrottleSettings unnamed = *t.per_caller->global;
  unnamed.key.clear();
  EXPECT_EQ(PerCallerFleetPrefix(unnamed, "s.S/M"), "grpc_resilience:s.S/M:caller");
  // Its errors are throttle.global's, at its own path.
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true},
                          "global": {"redis": "127.0.0.1:6379", "ratePerSecond": 40}}})"),
              HasSubstr("methodConfig[0].throttle.perCaller.global.expectedReplicas: required"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}}})"),
              HasSubstr("set maxConcurrency, ratePerSecond, global, or more than one"));
}

// Two entries whose caller keys share Redis buckets (one prefix) must agree
// on the rate, as two throttle.global on one key must.
TEST(PerCallerPolicyTest, OnePrefixIsOneBucketPerKeySoItsRatesMustAgree) {
  const std::string entry = R"({"name": [{"service": "s.S", "method": "%s"}],
      "throttle": {"perCaller": {"key": {"peer": true}, "global": {"redis": "127.0.0.1:6379",
      "key": "tenants", "ratePerSecond": %d, "expectedReplicas": 2}}}})";
  auto policy = [&](int rate_a, int rate_b) {
    return absl::StrCat(R"({"methodConfig": [)",
                        absl::StrReplaceAll(entry, {{"%s", "A"}, {"%d", absl::StrCat(rate_a)}}),
                        ", ",
                        absl::StrReplaceAll(entry, {{"%s", "B"}, {"%d", absl::StrCat(rate_b)}}),
                        "]}");
  };
  EXPECT_TRUE(Load(policy(10, 10)).ok());
  absl::StatusOr<PolicyTable> clash = Load(policy(10, 20));
  ASSERT_FALSE(clash.ok());
  EXPECT_THAT(clash.status().message(),
              HasSubstr("methodConfig[1].throttle.perCaller.global: key \"tenants:*\" at "
                        "127.0.0.1:6379 is also the bucket of "
                        "methodConfig[0].throttle.perCaller.global"));
}

// Caller keys may hold ':', so a key or a prefix under another entry's
// prefix would be one of its callers' buckets, whatever the rates: refused,
// naming the caller that would share it. Keys beside each other load.
TEST(PerCallerPolicyTest, KeysUnderAPerCallerPrefixAreRefused) {
  // Method A: per-caller buckets under "tenants:"; B and C: the throttles given.
  const auto policy = [](const std::string& b, const std::string& c) {
    return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "s.S", "method": "A"}],
        "throttle": {"perCaller": {"key": {"peer": true}, "global": {"redis": "127.0.0.1:6379",
        "key": "tenants", "ratePerSecond": 10, "expectedReplicas": 2}}}},
        {"name": [{"service": "s.S", "method": "B"}], "throttle": )", b, R"(},
        {"name": [{"service": "s.S", "method": "C"}], "throttle": )", c, "}]}");
  };
  const auto global = [](const std::string& key, const std::string& redis = "127.0.0.1:6379") {
    return absl::StrCat(R"({"global": {"redis": ")", redis, R"(", "key": ")", key,
                        R"(", "ratePerSecond": 10, "expectedReplicas": 2}})");
  };
  const auto per_caller = [](const std::string& key) {
    return absl::StrCat(R"({"perCaller": {"key": {"header": "x-t"}, "global": {"redis":
        "127.0.0.1:6379", "key": ")", key, R"(", "ratePerSecond": 10, "expectedReplicas": 2}}})");
  };
  const std::string fine = global("other");
  // A key under the prefix: the caller "acme"'s bucket.
  absl::StatusOr<PolicyTable> nested = Load(policy(global("tenants:acme"), fine));
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(),
              HasSubstr("methodConfig[1].throttle.global: key \"tenants:acme\" at "
                        "127.0.0.1:6379 lies under \"tenants:\", where "
                        "methodConfig[0].throttle.perCaller.global keeps a bucket per caller "
                        "key: its caller \"acme\" would share this bucket"));
  // A prefix under the prefix, found whichever entry comes first.
  absl::StatusOr<PolicyTable> deeper = Load(policy(fine, per_caller("tenants:eu")));
  ASSERT_FALSE(deeper.ok());
  EXPECT_THAT(deeper.status().message(),
              HasSubstr("key \"tenants:eu:*\" at 127.0.0.1:6379 lies under \"tenants:\""));
  EXPECT_THAT(deeper.status().message(), HasSubstr("its caller \"eu:...\""));
  absl::StatusOr<PolicyTable> above = Load(policy(per_caller("ten"), fine));
  EXPECT_TRUE(above.ok()) << above.status();  // "ten:" is not under "tenants:"
  // Beside it, on another Redis, or the prefix's own name: no caller's bucket.
  EXPECT_TRUE(Load(policy(global("tenants-eu"), fine)).ok());
  EXPECT_TRUE(Load(policy(global("tenants"), fine)).ok());
  EXPECT_TRUE(Load(policy(global("tenants:acme", "127.0.0.2:6379"), fine)).ok());
}

TEST(PerCallerPolicyTest, ReadsAPeerKeyAlongsideTheMethodsLimits) {
  absl::StatusOr<PolicyTable> table = LoadThrottle(
      R"({"maxConcurrency": 100, "perCaller": {"key": {"peer": true}, "ratePerSecond": 0.5,
          "burst": 3, "maxKeys": 20}})");
  ASSERT_TRUE(table.ok()) << table.status();
  const ThrottleSettings& t = *table->Find("/s.S/M").policy->throttle;
  EXPECT_EQ(t.max_concurrency, 100);
  EXPECT_EQ(t.per_caller->header, "");
  EXPECT_EQ(t.per_caller->limits.max_concurrency, 0);
  EXPECT_EQ(t.per_caller->limits.burst, 3);
  EXPECT_EQ(t.per_caller->limits.max_keys, 20);
}

TEST(PerCallerPolicyTest, ErrorsNameThePathAndValue) {
  const std::string at = "methodConfig[0].throttle.perCaller";
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"maxConcurrency": 2}})"),
              HasSubstr(at + ".key: required: {\"header\": \"x-tenant-id\"} or {\"peer\": true}"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": false}, "maxConcurrency": 2}})"),
              HasSubstr(at + ".key: required"));
  EXPECT_THAT(
      ErrorOf(R"({"perCaller": {"key": {"header": "x-t", "peer": true}, "maxConcurrency": 2}})"),
      HasSubstr(at + ".key: set header or peer, not both"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"header": "X-Tenant"}, "maxConcurrency": 2}})"),
              HasSubstr(at + ".key.header: must be 1 to 64 characters of [0-9a-z_.-], not "
                             "starting with \"grpc-\", got \"X-Tenant\""));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"header": "grpc-timeout"}, "maxConcurrency": 2}})"),
              HasSubstr("got \"grpc-timeout\""));
  EXPECT_THAT(ErrorOf(absl::StrCat(R"({"perCaller": {"key": {"header": ")",
                                   std::string(65, 'h'), R"("}, "maxConcurrency": 2}})")),
              HasSubstr(at + ".key.header: must be 1 to 64"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}}})"),
              HasSubstr(at + ": set maxConcurrency, ratePerSecond, global, or more than one"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 0}})"),
              HasSubstr(at + ".maxConcurrency: must be in [1, 1000000], got 0"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 2000000}})"),
              HasSubstr(at + ".maxConcurrency: must be in [1, 1000000], got 2000000"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 2, "burst": 4}})"),
              HasSubstr(at + ".burst: needs ratePerSecond"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "ratePerSecond": 1e10}})"),
              HasSubstr(at + ".ratePerSecond: must be in [1e-3, 1e9], got 1e+10"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "ratePerSecond": 5, "burst": 0}})"),
              HasSubstr(at + ".burst: must be in [1, 1e9], got 0"));
  EXPECT_THAT(
      ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 2, "maxKeys": 0}})"),
      HasSubstr(at + ".maxKeys: must be in [1, 1000000], got 0"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 2,
                                        "maxKeys": 1000001}})"),
              HasSubstr(at + ".maxKeys: must be in [1, 1000000], got 1000001"));
  EXPECT_THAT(ErrorOf(R"({"perCaller": {"key": {"peer": true}, "maxConcurrency": 2, "keys": 3}})"),
              HasSubstr("keys"));
}

}  // namespace
}  // namespace resilience
