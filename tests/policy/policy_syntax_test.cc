// File: tests/policy/policy_syntax_test.cc
//
// PolicyTable, the loader behind the public PolicySet. Syntax: malformed input,
// wrong JSON shapes, strict JSON only, one-line errors with a position.

#include "src/policy/policy_table.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/core/random_source.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/token_bucket.h"
#include "src/policy/method_catalog.h"
#include "src/retry/backoff.h"
#include "src/retry/retry_budget.h"

#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Malformed input of every kind gets a clear error and never crashes.
TEST(PolicyTableTest, MalformedInputs) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("policy JSON is empty"));
  EXPECT_THAT(ErrorOf(" \n\t "), HasSubstr("policy JSON is empty"));
  EXPECT_EQ(ErrorOf("not json"),
            "policy JSON: expected a value (object, array, string, number, true, false or null), "
            "found \"not json\" at line 1, column 1");
  EXPECT_THAT(ErrorOf("{\"methodConfig\": ["), HasSubstr("policy JSON"));
  EXPECT_EQ(ErrorOf("[]"),
            "policy JSON: expected an object such as {\"methodConfig\": [...]}, got an array");
  EXPECT_THAT(ErrorOf("42"), HasSubstr("policy JSON: expected an object such as"));
  EXPECT_THAT(ErrorOf("null"), HasSubstr("got null"));
  EXPECT_THAT(ErrorOf(R"({"methodConfgi": []})"), HasSubstr("methodConfgi: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempt": 3})")),
              HasSubstr("maxAttempt: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": "three"})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: expected a number, got "
                        "\"three\""));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": 1e12})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: invalid value"));
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "fast")")),
              HasSubstr("methodConfig[0].timeout: expected a duration such as \"0.2s\""));
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "99999999999999s")")),
              HasSubstr("methodConfig[0].timeout: invalid value"));  // protobuf's own range
  EXPECT_EQ(ErrorOf(R"({"methodConfig": 3})"),
            "policy JSON: methodConfig: expected an array, got 3");

  // Deep nesting inside an accepted free-form field: refused, no stack overflow.
  const std::string deep = absl::StrCat(R"({"healthCheckConfig": )", std::string(100000, '['),
                                        std::string(100000, ']'), "}");
  EXPECT_THAT(ErrorOf(deep), HasSubstr("policy JSON: healthCheckConfig[0][0]"));
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested deeper than 32 levels at line 1, column 54"));
  const std::string deep_objects =
      absl::StrCat(R"({"healthCheckConfig": )", [] {
        std::string s;
        for (int i = 0; i < 20000; ++i) s += "{\"a\":";
        s += "1";
        for (int i = 0; i < 20000; ++i) s += "}";
        return s;
      }(), "}");
  EXPECT_THAT(ErrorOf(deep_objects), HasSubstr("nested deeper than 32 levels"));

  // A large but valid file parses.
  std::string many = R"({"methodConfig": [)";
  for (int i = 0; i < 5000; ++i) {
    absl::StrAppend(&many, i ? "," : "", R"({"name": [{"service": "s.S", "method": "M)", i,
                    R"("}], "timeout": "1s"})");
  }
  many += "]}";
  PolicyTable set = MustParse(many);
  EXPECT_EQ(set.Find("/s.S/M4999").policy->timeout, absl::Seconds(1));
  EXPECT_EQ(set.policies().size(), 5000u);
}

TEST(PolicyTableTest, WrongJsonShapesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"methodConfig": [[{"name": [{}]}]]})",
       "policy JSON: methodConfig[0]: expected an object, got an array"},
      {R"({"methodConfig": [{"name": [{}]}, [[{"name": [{"service": "a"}]}]]]})",
       "policy JSON: methodConfig[1]: expected an object, got an array"},
      {R"({"methodConfig": {"name": [{}]}})",
       "policy JSON: methodConfig: expected an array, got an object"},
      {R"({"methodConfig": [{"name": {"service": "x"}}]})",
       "policy JSON: methodConfig[0].name: expected an array, got an object"},
      {R"({"methodConfig": [{"name": [[{"service": "x"}]]}]})",
       "policy JSON: methodConfig[0].name[0]: expected an object, got an array"},
      {R"({"methodConfig": [null]})", "policy JSON: methodConfig[0]: expected an object, got null"},
      {R"({"methodConfig": [{"name": [null]}]})",
       "policy JSON: methodConfig[0].name[0]: expected an object, got null"},
      {R"({"methodConfig": [{"name": [{"service": 5}]}]})",
       "policy JSON: methodConfig[0].name[0].service: expected a string, got 5"},
      {R"({"methodConfig": [{"name": [{"service": ["a.S"]}]}]})",
       "policy JSON: methodConfig[0].name[0].service: expected a string, got an array"},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": "UNAVAILABLE"})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes: expected an array, got "
       "\"UNAVAILABLE\""},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": [["UNAVAILABLE"]]})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes[0]: expected a string, "
       "got an array"},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": [null]})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes[0]: expected a string, "
       "got null"},
      {Entry(R"("breaker": {"sre": {}, "failureCodes": "INTERNAL"})"),
       "policy JSON: methodConfig[0].breaker.failureCodes: expected an array, got \"INTERNAL\""},
      {Entry(R"("waitForReady": "true")"),
       "policy JSON: methodConfig[0].waitForReady: expected true or false, got \"true\""},
      {Entry(R"("retryPolicy": {"fullJitter": "false"})"),
       "policy JSON: methodConfig[0].retryPolicy.fullJitter: expected true or false, got "
       "\"false\""},
      {Entry(R"("waitForReady": 1)"),
       "policy JSON: methodConfig[0].waitForReady: expected true or false, got 1"},
      {Entry(R"("timeout": {"seconds": 5})"),
       "policy JSON: methodConfig[0].timeout: expected a duration such as \"0.2s\" (seconds "
       "with up to 9 decimals, then s), got an object"},
      {Entry(R"("timeout": 5)"), "policy JSON: methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": " 1s")"), "methodConfig[0].timeout: expected a duration such as "
                                     "\"0.2s\" (seconds with up to 9 decimals, then s), got "
                                     "\" 1s\""},
      {Entry(R"("timeout": "+1s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": "1.s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": "1.0000000001s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": ["1s"])"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("retryPolicy": {"jitter": "0x1"})"),
       "policy JSON: methodConfig[0].retryPolicy.jitter: expected a number, got \"0x1\""},
      {Entry(R"("retryPolicy": {"maxAttempts": [3]})"),
       "policy JSON: methodConfig[0].retryPolicy.maxAttempts: expected a number, got an array"},
      {Entry(R"("retryPolicy": {"maxAttempts": true})"),
       "policy JSON: methodConfig[0].retryPolicy.maxAttempts: expected a number, got true"},
      {Entry(R"("retryPolicy": [])"),
       "policy JSON: methodConfig[0].retryPolicy: expected an object, got an array"},
      {Entry(R"("retryPolicy": "none")"),
       "policy JSON: methodConfig[0].retryPolicy: expected an object, got \"none\""},
      {Entry(R"("hedgingPolicy": [1])"),
       "policy JSON: methodConfig[0].hedgingPolicy: expected an object, got an array"},
      {R"({"loadBalancingConfig": {"round_robin": {}}})",
       "policy JSON: loadBalancingConfig: expected an array, got an object"},
      {R"({"loadBalancingConfig": [[{"round_robin": {}}]]})",
       "policy JSON: loadBalancingConfig[0]: expected an object, got an array"},
      {R"({"retryThrottling": {"maxTokens": {"value": 10}}})",
       "policy JSON: retryThrottling.maxTokens: expected a number, got an object"},
      // Written under both its JSON and its proto name: protobuf merges them.
      {Entry(R"("retryPolicy": {"maxAttempts": 2}, "retry_policy": {"jitter": 0.5})"),
       "policy JSON: methodConfig[0]: \"retryPolicy\" and \"retry_policy\" are the same field; "
       "write it once, as \"retryPolicy\""},
      // Values are shown printable and cut short, here and in the loader's own
      // messages.
      {Entry(R"("retryPolicy": {"retryableStatusCodes": ["UNAVAIL\u0000ABLE"]})"),
       "retryableStatusCodes[0]: unknown status code \"UNAVAIL\\x00ABLE\""},
      {Entry(R"("breaker": {"threeState": {"mode": "\u00e9"}})"), "got \"\\xc3\\xa9\""},
      {Entry(absl::StrCat(R"("waitForReady": ")", std::string(100, 'y'), "\xc3\xa9\"")),
       absl::StrCat("got \"", std::string(64, 'y'), "...\"")},
      {Entry("\"waitForReady\": \"\xc3\xa9\\t\""), "got \"\\xc3\\xa9\\x09\""},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_THAT(ErrorOf(json), HasSubstr(expected)) << json;
  }
  // What proto3 JSON does allow still loads: numbers as strings, NaN and
  // Infinity as strings (then refused by range), 3.0 for an int, null for a
  // field left out, the proto name alone, free-form Structs of any shape.
  PolicyTable set = MustParse(Entry(
      R"("retryPolicy": {"maxAttempts": "4", "jitter": "0.5", "backoffMultiplier": 3.0},)"
      R"("fault_injection": {"seed": "18446744073709551615", "abortCode": "INTERNAL"},)"
      R"("timeout": null, "breaker": null, "hedgingPolicy": null,)"
      R"("throttle": {"maxConcurrency": 2.0, "ratePerSecond": "1e3"})"));
  const MethodPolicy& p = *set.Find("/s.S/M").policy;
  EXPECT_EQ(p.retry->max_attempts, 4);
  EXPECT_EQ(p.retry->jitter, 0.5);
  EXPECT_EQ(p.fault_injection->seed, 18446744073709551615u);
  EXPECT_FALSE(p.timeout.has_value());
  EXPECT_EQ(p.breaker.kind, BreakerKind::kNone);
  EXPECT_EQ(p.throttle->max_concurrency, 2);
  EXPECT_EQ(p.throttle->rate_per_second, 1000);
  EXPECT_TRUE(set.warnings().empty());
  // Past the shape check (null inside a Struct's arrays is fine there), the
  // load-balancing check refuses the field by name.
  EXPECT_EQ(ErrorOf(R"({"healthCheckConfig": {"a": [[1, null], {"b": [[]]}]}})"),
            "healthCheckConfig.a: not a field of healthCheckConfig (serviceName)");
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"jitter": "-Infinity"})")),
              HasSubstr("methodConfig[0].retryPolicy.jitter: must be in [0, 1], got -inf"));
}

// protobuf's parser also takes text that is not JSON at all, or is
// ambiguous: refused with the path, what is wrong and where.
TEST(PolicyTableTest, OnlyStrictJsonIsAccepted) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1s\",}]}",
       "policy JSON: methodConfig[0]: trailing comma (not allowed in JSON) at line 1, column 49"},
      {"{\"methodConfig\": [{\"name\": [{},]}]}",
       "policy JSON: methodConfig[0].name: trailing comma (not allowed in JSON) at line 1, "
       "column 31"},
      {"{\"methodConfig\": [],\n}", "policy JSON: trailing comma (not allowed in JSON) at line 1, "
                                    "column 20"},
      {"{'methodConfig': []}",
       "policy JSON: single-quoted key (JSON strings use double quotes) at line 1, column 2"},
      {"{\"methodConfig\": [{\"name\": [{\"service\": 'a.S'}]}]}",
       "policy JSON: methodConfig[0].name[0].service: single-quoted string (JSON strings use "
       "double quotes) at line 1, column 41"},
      {"{methodConfig: []}",
       "policy JSON: unquoted key methodConfig (JSON keys are strings in double quotes) at "
       "line 1, column 2"},
      {"{\"methodConfig\": [{\"name\": [{}],\n  \"timeout\": \"1s\",\n  \"timeout\": \"2s\"}]}",
       "policy JSON: methodConfig[0]: duplicate key \"timeout\" (first at line 2, column 3) at "
       "line 3, column 3"},
      // The same key, spelled with an escape.
      {"{\"methodConfig\": [], \"method\\u0043onfig\": []}",
       "policy JSON: duplicate key \"methodConfig\" (first at line 1, column 2) at line 1, "
       "column 22"},
      {"{\"methodConfig\": [{\"name\": [{}]}], \"retryThrottling\": {\"maxTokens\": 10.}}",
       "policy JSON: retryThrottling.maxTokens: invalid number 10. (JSON wants a digit after the "
       "decimal point) at line 1, column 69"},
      {"{\"loadBalancingPolicy\": \"a\\xb\"}",
       "policy JSON: loadBalancingPolicy: invalid escape \\x in a string at line 1, column 27"},
      {"{\"loadBalancingPolicy\": \"a\tb\"}",
       "policy JSON: loadBalancingPolicy: raw control character \\x09 in a string (JSON wants "
       "it escaped) at line 1, column 27"},
      {"{\"healthCheckConfig\": {\"k\\u00e9y\": {\"a\": 1, \"a\": 2}}}",
       "policy JSON: healthCheckConfig.k\\xc3\\xa9y: duplicate key \"a\" (first at line 1, "
       "column 37) at line 1, column 45"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_EQ(ErrorOf(json), expected) << json;
  }
  // Valid JSON with every escape, surrogate pairs and numbers of every form
  // still loads.
  PolicyTable set = MustParse(R"({"methodConfig": [{"name": [{"service": "a\"\\\b\f\n\r\t\u0041)"
                            R"(\ud83d\ude00"}], "retryPolicy": {"jitter": 0.5e-0, )"
                            R"("maxAttempts": 20E-1, "backoffMultiplier": 1E+0}}]})");
  ASSERT_EQ(set.names().size(), 1u);
  EXPECT_EQ(set.names()[0].service, "a\"\\\b\f\n\r\tA\xf0\x9f\x98\x80");
  EXPECT_EQ(set.policies()[0].retry->jitter, 0.5);
  EXPECT_EQ(set.policies()[0].retry->max_attempts, 2);
  // Nesting: 32 levels load, 33 do not.
  const auto nested = [](int levels) {
    std::string open, close;
    for (int i = 2; i < levels; ++i) {
      open += i % 2 ? "[" : "{\"a\": ";
      close.insert(0, i % 2 ? "]" : "}");
    }
    return absl::StrCat(R"({"healthCheckConfig": )", open, "{}", close, "}");
  };
  // 32 levels pass the parser: what refuses them is the health check's
  // field check, which comes after it.
  EXPECT_EQ(ErrorOf(nested(32)),
            "healthCheckConfig.a: not a field of healthCheckConfig (serviceName)");
  EXPECT_THAT(ErrorOf(nested(33)), HasSubstr("nested deeper than 32 levels"));
}

// JSON syntax errors: one line that says where, and never the raw input
// (which may hold bytes that are not text).
TEST(PolicyTableSyntaxTest, SyntaxErrorsAreOneLineWithAPositionAndNoRawBytes) {
  absl::StatusOr<PolicyTable> token = Load("{\"methodConfig\": [\n  {\"name\": [}] }");
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), ::testing::HasSubstr("at line 2, column 13"));
  EXPECT_EQ(std::string(token.status().message()).find('\n'), std::string::npos);

  absl::StatusOr<PolicyTable> bytes =
      Load(std::string("{\"methodConfig\":[{\"name\":[\xff\xfe{}]}]}"));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "policy JSON: not valid UTF-8 at line 1, column 27 (byte 26)");
  for (const absl::StatusOr<PolicyTable>* result : {&token, &bytes}) {
    for (unsigned char c : std::string(result->status().message())) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7F) << static_cast<int>(c);
    }
  }
}

// A file saved with a UTF-8 byte-order mark (as editors on Windows do) loads
// as the same file without it; a byte that starts no value is named with its
// position instead of protobuf's bare "Expected a value.".
TEST(PolicyTableSyntaxTest, AByteOrderMarkIsIgnoredAndAStrayByteIsShownWithItsPosition) {
  const std::string body =
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], "timeout": "1s"}]})";
  absl::StatusOr<PolicyTable> with_bom = Load("\xEF\xBB\xBF" + body);
  ASSERT_TRUE(with_bom.ok()) << with_bom.status();
  EXPECT_EQ(with_bom->Find("/cache.v1.CacheService/Get").policy->timeout, absl::Seconds(1));

  absl::StatusOr<PolicyTable> stray = Load("{\"methodConfig\": [\n  @]}");
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.status().message(),
            "policy JSON: methodConfig[0]: expected a value (object, array, string, number, true, "
            "false or null), found \"@]}\" at line 2, column 3");

  absl::StatusOr<PolicyTable> two_boms = Load("\xEF\xBB\xBF\xEF\xBB\xBF" + body);
  ASSERT_FALSE(two_boms.ok());
  EXPECT_THAT(std::string(two_boms.status().message()),
              ::testing::HasSubstr(R"(found "\xef\xbb\xbf{"methodC..." at line 1, column 1)"));

  absl::StatusOr<PolicyTable> truncated = Load("{\"methodConfig\": ");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), ::testing::HasSubstr("found the end of the text"));
}

// The loader reads the text once, into its own tree: the syntax errors
// protobuf's parser used to report (often "at line 1, column 1", without a
// path) name the JSON path and where the error is, as the others do.
TEST(PolicyTableSyntaxTest, EverySyntaxErrorNamesItsPathAndPosition) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"methodConfig": [1 2]})",
       R"(policy JSON: methodConfig: expected ',' or ']', found "2]}" at line 1, column 21)"},
      {R"({"loadBalancingPolicy": "abc)",
       "policy JSON: loadBalancingPolicy: unterminated string at line 1, column 25"},
      {R"({"a" 1})", R"(policy JSON: expected ':' after the key, found "1}" at line 1, column 6)"},
      {R"({1: 2})",
       R"(policy JSON: expected a key in double quotes, found "1: 2}" at line 1, column 2)"},
      {R"({} x)",
       R"(policy JSON: unexpected "x" after the end of the JSON value at line 1, column 4)"},
      {R"({"retryThrottling": {"maxTokens": 10, "tokenRatio": 1e400}})",
       "policy JSON: retryThrottling.tokenRatio: number 1e400 exceeds the range of double at "
       "line 1, column 53"},
      {R"({"loadBalancingPolicy": "\ud800"})",
       "policy JSON: loadBalancingPolicy: unpaired surrogate escape in a string (not valid "
       "UTF-16) at line 1, column 26"},
      {R"({"retryThrottling": {"maxTokens": 01}})",
       "policy JSON: retryThrottling.maxTokens: invalid number 01 at line 1, column 35"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_EQ(ErrorOf(json), expected) << json;
  }
}

// The loader fills the schema's message from its own tree; what protobuf's
// JSON parser said about unknown fields and values out of a type's range is
// said the same way (the last such error in the file, as protobuf reports).
TEST(PolicyTableSyntaxTest, UnknownFieldsAndOutOfRangeValuesKeepProtobufsWording) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"bogus1": 1, "bogus2": 2})", "policy JSON: bogus2: Cannot find field."},
      {Entry(R"("retryPolicy": {"maxAttempts": 3, "b\u00e9": 1})"),
       "policy JSON: methodConfig[0].retryPolicy: b\\xc3\\xa9: Cannot find field."},
      {R"({"retryThrottling": {"maxTokens": 0.5}})",
       "policy JSON: retryThrottling.maxTokens: invalid value 0.5 for type TYPE_INT32"},
      {R"({"retryThrottling": {"maxTokens": 4294967296}})",
       "policy JSON: retryThrottling.maxTokens: invalid value 4294967296 for type TYPE_INT32"},
      {R"({"retryThrottling": {"maxTokens": "1.5"}})",
       "policy JSON: retryThrottling.maxTokens: invalid value \"1.5\" for type TYPE_INT32"},
      {Entry(R"("maxRequestMessageBytes": 1e20)"),
       "policy JSON: methodConfig[0].maxRequestMessageBytes: invalid value 1e+20 for type "
       "TYPE_UINT32"},
      {Entry(R"("maxRequestMessageBytes": "-0")"),
       "policy JSON: methodConfig[0].maxRequestMessageBytes: invalid value \"-0\" for type "
       "TYPE_UINT32"},
      {Entry(R"("retryPolicy": {"maxAttempts": 3, "jitter": "1e400"})"),
       "policy JSON: methodConfig[0].retryPolicy.jitter: invalid value \"1e400\" for type "
       "TYPE_DOUBLE"},
      {Entry(R"("retry_policy": {"per_attempt_timeout": "99999999999999s"})"),
       "policy JSON: methodConfig[0].retryPolicy.perAttemptTimeout: invalid value Field "
       "'per_attempt_timeout', Duration value exceeds limits for type "
       "type.googleapis.com/google.protobuf.Duration"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_EQ(ErrorOf(json), expected) << json;
  }
  // Numbers as strings, and integers written as doubles, load as protobuf
  // reads them.
  PolicyTable set = MustParse(Entry(R"("retryPolicy": {"maxAttempts": "3", "jitter": "0.5", )"
                                    R"("initialBackoff": "0.000000001s"}, "timeout": "1.5s")"));
  EXPECT_EQ(set.policies()[0].retry->max_attempts, 3);
  EXPECT_EQ(set.policies()[0].retry->jitter, 0.5);
  EXPECT_EQ(set.policies()[0].retry->initial_backoff, absl::Nanoseconds(1));
  EXPECT_EQ(set.policies()[0].timeout, absl::Milliseconds(1500));
}

}  // namespace
}  // namespace resilience
