// File: tests/policy/policy_table_test_util.h
//
// Helpers of the PolicyTable tests: a method catalog standing in for the
// linked services, loading with it, and the example file.

#ifndef GRPC_RESILIENCE_TESTS_POLICY_POLICY_TABLE_TEST_UTIL_H_
#define GRPC_RESILIENCE_TESTS_POLICY_POLICY_TABLE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {

// The methods this file's policies name, standing in for the services a
// real process links (the loader warns about names that match none of them;
// method_catalog_test checks that against the linked ones).
inline const MethodCatalog& TestMethods() {
  static const MethodCatalog* const methods = new MethodCatalog({
      {"s.S", "M"},
      {"a.S", "Get"},
      {"a.S", "Store"},
      {"b.T", "Get"},
      {"x", "M"},
      {"helloworld.Greeter", "SayHello"},
      {"demo.Echo", "Echo"},
      {"cache.v1.CacheService", "Get"},
      {"cache.v1.CacheService", "Store"},
      {"cache.v1.CacheService", "Dump", false, true},
      {"cache.v1.Other", "M"},
  });
  return *methods;
}

inline absl::StatusOr<PolicyTable> Load(absl::string_view json,
                                       PolicyTable::LoadOptions options = {}) {
  if (options.methods == nullptr) options.methods = &TestMethods();
  return PolicyTable::FromJsonString(json, options);
}

inline absl::StatusOr<PolicyTable> LoadFile(const std::string& path,
                                           PolicyTable::LoadOptions options = {}) {
  if (options.methods == nullptr) options.methods = &TestMethods();
  return PolicyTable::FromJsonFile(path, options);
}


// The example from the policy issue, as a user would write it.
inline constexpr char kExample[] = R"json({
  "methodConfig": [
    {
      "name": [{"service": "cache.v1.CacheService", "method": "Get"}, {"service": "cache.v1.Other"}],
      "timeout": "0.2s",
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "jitter": 0.2, "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"sre": {"k": 1.5, "protection": 5, "window": "10s", "buckets": 40}},
      "throttle": {"maxConcurrency": 5, "ratePerSecond": 100, "burst": 20,
                   "minPushback": "0.05s", "maxPushback": "2s"},
      "faultInjection": {"delay": "0.2s", "delayFraction": 1.0, "abortCode": "UNAVAILABLE", "abortFraction": 0.2}
    }
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
})json";

inline PolicyTable MustParse(const std::string& json) {
  absl::StatusOr<PolicyTable> set = Load(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicyTable();
}

// The error message of parsing `json`, which must fail with InvalidArgument.
inline std::string ErrorOf(const std::string& json) {
  absl::StatusOr<PolicyTable> set = Load(json);
  EXPECT_FALSE(set.ok()) << json;
  if (set.ok()) return "";
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument) << set.status();
  return std::string(set.status().message());
}

// One methodConfig entry for Get with `fields` added.
// A table of one entry for /s.S/M whose `throttle` is the JSON `throttle`.
inline absl::StatusOr<PolicyTable> LoadThrottle(const std::string& throttle) {
  return Load(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}], )",
                           R"("throttle": )", throttle, "}]}"));
}

inline std::string Entry(const std::string& fields) {
  return absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}])",
      fields.empty() ? "" : ", ", fields, "}]}");
}

// The warnings of loading `json`, which must load.
inline std::vector<std::string> WarningsOf(const std::string& json) {
  absl::StatusOr<PolicyTable> set = Load(json);
  EXPECT_TRUE(set.ok()) << json << ": " << set.status();
  return set.ok() ? set->warnings() : std::vector<std::string>{};
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_POLICY_POLICY_TABLE_TEST_UTIL_H_
