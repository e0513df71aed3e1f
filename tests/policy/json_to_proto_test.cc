// File: tests/policy/json_to_proto_test.cc
//
// The loader's one parse (JsonScanner into a JsonValue tree) and the walk
// from the tree to resilience.v1.PolicyFile (JsonToProto): positions kept in
// the tree, which error wins when a file has several, and the free-form
// Struct fields filled as protobuf's parser filled them.

#include "src/policy/json_to_proto.h"

#include <cmath>
#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/json_scanner.h"
#include "src/policy/json_value.h"

namespace resilience {
namespace {

absl::StatusOr<JsonValue> Tree(const std::string& text) { return JsonScanner(text).Parse(); }

// The status of filling a PolicyFile from `text`, which must be JSON.
absl::Status Fill(const std::string& text, v1::PolicyFile& file) {
  absl::StatusOr<JsonValue> tree = Tree(text);
  EXPECT_TRUE(tree.ok()) << tree.status();
  if (!tree.ok()) return tree.status();
  return JsonToProto::Fill(*tree, file);
}

std::string ErrorOf(const std::string& text) {
  v1::PolicyFile file;
  return std::string(Fill(text, file).message());
}

TEST(JsonScannerTest, TheTreeKeepsKindsTextsAndWhereEachValueStarts) {
  absl::StatusOr<JsonValue> tree = Tree("{\"a\": [1.50, \"x\\n\", true, null],\n \"b\": {}}");
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->kind, JsonValue::Kind::kObject);
  ASSERT_EQ(tree->members.size(), 2u);
  EXPECT_EQ(tree->members[0].key, "a");
  const JsonValue& a = tree->members[0].value;
  ASSERT_EQ(a.elements.size(), 4u);
  EXPECT_EQ(a.offset, 6u);
  EXPECT_EQ(a.elements[0].kind, JsonValue::Kind::kNumber);
  EXPECT_EQ(a.elements[0].text, "1.50");  // as written
  EXPECT_EQ(a.elements[1].text, "x\n");   // decoded
  EXPECT_EQ(a.elements[2].text, "true");
  EXPECT_EQ(a.elements[3].kind, JsonValue::Kind::kNull);
  ASSERT_NE(tree->Find("b"), nullptr);
  EXPECT_EQ(tree->Find("b")->offset, 39u);
  EXPECT_EQ(tree->Find("c"), nullptr);
}

// A wrong shape anywhere beats what protobuf's parser would have said, and
// among shapes the first in schema order wins (not the first in the text).
TEST(JsonToProtoTest, ShapesFirstInSchemaOrderThenProtobufsLastInFileOrder) {
  EXPECT_EQ(ErrorOf(R"({"bogus": 1, "retryThrottling": {"maxTokens": "x"}, "methodConfig": 3})"),
            "policy JSON: methodConfig: expected an array, got 3");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"timeout": 5, "name": [{"service": 5}]}]})"),
            "policy JSON: methodConfig[0].name[0].service: expected a string, got 5");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 0.5, "bogus": 1}})"),
            "policy JSON: retryThrottling: bogus: Cannot find field.");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"bogus": 1, "maxTokens": 0.5}})"),
            "policy JSON: retryThrottling.maxTokens: invalid value 0.5 for type TYPE_INT32");
  // Paths of protobuf's errors in JSON names, however the file wrote them.
  EXPECT_EQ(ErrorOf(R"({"retry_throttling": {"max_tokens": 1e10}})"),
            "policy JSON: retryThrottling.maxTokens: invalid value 10000000000 for type "
            "TYPE_INT32");
  // Shape errors keep the names as written.
  EXPECT_EQ(ErrorOf(R"({"retry_throttling": {"max_tokens": "x"}})"),
            "policy JSON: retry_throttling.max_tokens: expected a number, got \"x\"");
}

TEST(JsonToProtoTest, FreeFormFieldsAreFilledAsProtobufFilledThem) {
  v1::PolicyFile file;
  ASSERT_TRUE(Fill(R"({"healthCheckConfig": {"serviceName": "s", "n": [1, {"b": null}, []]},
                       "loadBalancingConfig": [{"round_robin": {}}]})",
                   file)
                  .ok());
  const google::protobuf::Struct& h = file.health_check_config();
  EXPECT_EQ(h.fields().at("serviceName").string_value(), "s");
  const google::protobuf::ListValue& n = h.fields().at("n").list_value();
  ASSERT_EQ(n.values_size(), 3);
  EXPECT_EQ(n.values(0).number_value(), 1);
  EXPECT_EQ(n.values(1).struct_value().fields().at("b").kind_case(),
            google::protobuf::Value::kNullValue);
  EXPECT_EQ(n.values(2).kind_case(), google::protobuf::Value::kListValue);
  ASSERT_EQ(file.load_balancing_config_size(), 1);
  EXPECT_EQ(file.load_balancing_config(0).fields().at("round_robin").kind_case(),
            google::protobuf::Value::kStructValue);
}

TEST(JsonToProtoTest, DurationsAndNumbersAsProto3JsonReadsThem) {
  v1::PolicyFile file;
  ASSERT_TRUE(Fill(R"({"methodConfig": [{"name": [{}], "timeout": "-0.5s",
                       "retryPolicy": {"maxAttempts": "3", "jitter": 2E-1,
                                       "initialBackoff": "1.000000001s"},
                       "maxRequestMessageBytes": 4294967295}],
                       "retryThrottling": {"tokenRatio": "Infinity"}})",
                   file)
                  .ok());
  const v1::MethodConfig& entry = file.method_config(0);
  EXPECT_EQ(entry.timeout().seconds(), 0);
  EXPECT_EQ(entry.timeout().nanos(), -500000000);
  EXPECT_EQ(entry.retry_policy().max_attempts(), 3);
  EXPECT_EQ(entry.retry_policy().jitter(), 0.2);
  EXPECT_EQ(entry.retry_policy().initial_backoff().seconds(), 1);
  EXPECT_EQ(entry.retry_policy().initial_backoff().nanos(), 1);
  EXPECT_EQ(entry.max_request_message_bytes(), 4294967295u);
  EXPECT_TRUE(std::isinf(file.retry_throttling().token_ratio()));
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "timeout": "315576000001s"}]})"),
            "policy JSON: methodConfig[0].timeout: invalid value Field 'timeout', Duration value "
            "exceeds limits for type type.googleapis.com/google.protobuf.Duration");
}

}  // namespace
}  // namespace resilience
