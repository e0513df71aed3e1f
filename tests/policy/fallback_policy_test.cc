// File: tests/policy/fallback_policy_test.cc
//
// methodConfig[].fallback: a static response checked against the method's
// response type (linked here: tests/client_interceptors/test_service.proto),
// or a status; its errors (path and value named) and what it cannot answer
// (warnings).

#include <string>

#include "absl/strings/str_cat.h"
#include "client_interceptors/test_service.pb.h"
#include "gmock/gmock.h"
#include "grpc_resilience/policy.h"
#include "gtest/gtest.h"
#include "src/policy/policy_set_access.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// An entry for TestService/Unary with `fields` (a breaker, so that a
// fallback has refusals to answer).
std::string Entry(const std::string& fields,
                  const std::string& names = R"({"service": "resilience.test.TestService",
                                                  "method": "Unary"})") {
  return absl::StrCat(R"({"methodConfig": [{"name": [)", names,
                      R"(], "breaker": {"sre": {}}, )", fields, "}]}");
}

std::string ErrorOf(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  return set.ok() ? "loaded" : std::string(set.status().message());
}

const MethodPolicy* UnaryPolicy(const PolicySet& set) {
  return PolicySetAccess::Table(set).Find("/resilience.test.TestService/Unary").policy;
}

TEST(FallbackPolicyTest, ResponseIsKeptSerialized) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(
      Entry(R"("fallback": {"response": {"text": "stale"}, "onCodes": ["UNAVAILABLE"]})"));
  ASSERT_TRUE(set.ok()) << set.status();
  const MethodPolicy* policy = UnaryPolicy(*set);
  ASSERT_NE(policy, nullptr);
  ASSERT_TRUE(policy->fallback.has_value());
  resilience::test::Resp response;
  ASSERT_TRUE(response.ParseFromString(policy->fallback->response));
  EXPECT_EQ(response.text(), "stale");
  EXPECT_EQ(policy->fallback->code, absl::StatusCode::kOk);
  EXPECT_EQ(policy->fallback->codes.size(), 1u);
  EXPECT_TRUE(policy->fallback->local_rejections);
  EXPECT_THAT(set->warnings(), IsEmpty());
}

TEST(FallbackPolicyTest, StatusInsteadOfAResponse) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(Entry(
      R"("fallback": {"status": "NOT_FOUND", "message": "no copy", "onLocalRejections": false})"));
  ASSERT_TRUE(set.ok()) << set.status();
  const MethodPolicy* policy = UnaryPolicy(*set);
  ASSERT_TRUE(policy->fallback.has_value());
  EXPECT_EQ(policy->fallback->code, absl::StatusCode::kNotFound);
  EXPECT_EQ(policy->fallback->message, "no copy");
  EXPECT_FALSE(policy->fallback->local_rejections);
}

TEST(FallbackPolicyTest, ErrorsNameThePathAndTheValue) {
  EXPECT_EQ(ErrorOf(Entry(R"("fallback": {})")),
            "methodConfig[0].fallback: needs exactly one of `response` (the response message as "
            "JSON) and `status`, got neither");
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"response": {}, "status": "NOT_FOUND"})")),
              HasSubstr("got both"));
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"response": {"txt": "x"}})")),
              HasSubstr("methodConfig[0].fallback.response: {\"txt\":\"x\"} is not a "
                        "resilience.test.Resp"));
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"status": "NOPE"})")),
              HasSubstr("methodConfig[0].fallback.status"));
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"status": "OK"})")),
              HasSubstr("methodConfig[0].fallback.status: \"OK\""));
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"status": "ABORTED", "onCodes": ["X"]})")),
              HasSubstr("methodConfig[0].fallback.onCodes[0]"));
  EXPECT_THAT(ErrorOf(Entry(R"("fallback": {"response": {"text": "x"}})",
                            R"({"service": "resilience.test.TestService"})")),
              HasSubstr("the whole service \"resilience.test.TestService\""));
}

TEST(FallbackPolicyTest, WhatCannotActIsAWarning) {
  // A method not linked here: its response type is unknown.
  absl::StatusOr<PolicySet> unknown = PolicySet::FromJsonString(
      Entry(R"("fallback": {"response": {"text": "x"}})", R"({"service": "a.B", "method": "C"})"));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_THAT(unknown->warnings(), testing::Contains(HasSubstr(
                                       "methodConfig[0].fallback: ignored: method /a.B/C is not "
                                       "linked into this process")));
  // Neither codes nor refusals.
  absl::StatusOr<PolicySet> nothing = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "fallback": {"status": "NOT_FOUND"}}]})");
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_THAT(nothing->warnings(),
              testing::Contains(HasSubstr("methodConfig[0].fallback: answers nothing")));
}

}  // namespace
}  // namespace resilience
