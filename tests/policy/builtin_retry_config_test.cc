#include "src/policy/builtin_retry_config.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Two services with every call type.
MethodCatalog Shop() {
  return MethodCatalog({
      {"shop.v1.Inventory", "GetItem", false, false},
      {"shop.v1.Inventory", "ListItems", false, true},
      {"shop.v1.Inventory", "Upload", true, false},
      {"shop.v1.Inventory", "Sync", true, true},
      {"shop.v1.Billing", "Charge", false, false},
      {"shop.v1.Billing", "Watch", false, true},
  });
}

PolicyTable MustParse(const std::string& json) {
  absl::StatusOr<PolicyTable> set = PolicyTable::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status() << "\n" << json;
  return set.ok() ? *std::move(set) : PolicyTable();
}

// The generated config as gRPC reads it: entries by name key ("" the
// default, "svc/" a service, "svc/method"), most specific match first.
struct GrpcView {
  std::map<std::string, google::protobuf::Struct> entries;
  std::optional<google::protobuf::Struct> throttling;

  const google::protobuf::Struct* Resolve(const std::string& service,
                                          const std::string& method) const {
    for (const std::string& key : {absl::StrCat(service, "/", method),
                                   absl::StrCat(service, "/"), std::string()}) {
      if (auto it = entries.find(key); it != entries.end()) return &it->second;
    }
    return nullptr;
  }
  // waitForReady as gRPC applies it to `service`/`method`.
  std::optional<bool> WaitForReady(const std::string& service, const std::string& method) const {
    const google::protobuf::Struct* entry = Resolve(service, method);
    if (entry == nullptr) return std::nullopt;
    auto it = entry->fields().find("waitForReady");
    if (it == entry->fields().end()) return std::nullopt;
    return it->second.bool_value();
  }
  bool Retries(const std::string& service, const std::string& method) const {
    const google::protobuf::Struct* entry = Resolve(service, method);
    return entry != nullptr && entry->fields().contains("retryPolicy");
  }
};

// Parses `json` (which must be valid JSON with unique names, as gRPC wants).
GrpcView Read(const std::string& json) {
  GrpcView view;
  google::protobuf::Struct config;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &config);
  if (!status.ok()) {
    ADD_FAILURE() << status.ToString() << "\n" << json;
    return view;
  }
  auto method_config = config.fields().find("methodConfig");
  if (method_config == config.fields().end()) {
    ADD_FAILURE() << "no methodConfig in " << json;
    return view;
  }
  for (const auto& entry : method_config->second.list_value().values()) {
    for (const auto& name : entry.struct_value().fields().at("name").list_value().values()) {
      const auto& f = name.struct_value().fields();
      const std::string service = f.contains("service") ? f.at("service").string_value() : "";
      const std::string method = f.contains("method") ? f.at("method").string_value() : "";
      const std::string key = service.empty() ? "" : absl::StrCat(service, "/", method);
      EXPECT_TRUE(view.entries.emplace(key, entry.struct_value()).second)
          << "name " << key << " twice in " << json;
    }
  }
  if (config.fields().contains("retryThrottling")) {
    view.throttling = config.fields().at("retryThrottling").struct_value();
  }
  return view;
}

// The invariants every generated config keeps, for the methods of `catalog`
// and a few that are not linked: a retryPolicy only on exact names of linked
// streaming methods, and the waitForReady of the policy PolicyTable picks.
void ExpectMirrors(const PolicyTable& policies, const MethodCatalog& catalog,
                   const BuiltInRetryConfig& config) {
  if (config.service_config().empty()) return;
  const GrpcView view = Read(config.service_config());
  for (const auto& [key, entry] : view.entries) {
    if (!entry.fields().contains("retryPolicy")) continue;
    const MethodCatalog::Method* m = catalog.Find(absl::StrCat("/", key));
    ASSERT_NE(m, nullptr) << "retryPolicy on " << key << ", not an exact linked method";
    EXPECT_TRUE(m->streaming()) << "retryPolicy on unary " << key;
  }
  std::vector<std::pair<std::string, std::string>> methods;
  for (const MethodCatalog::Method& m : catalog.methods()) methods.emplace_back(m.service, m.method);
  methods.emplace_back("shop.v1.Inventory", "NotLinked");
  methods.emplace_back("other.Service", "Any");
  for (const auto& [service, method] : methods) {
    const MethodPolicy* policy = policies.Find(absl::StrCat("/", service, "/", method)).policy;
    const std::optional<bool> expected =
        policy == nullptr ? std::nullopt : policy->wait_for_ready;
    EXPECT_EQ(view.WaitForReady(service, method), expected) << service << "/" << method;
  }
}

constexpr char kRetry[] =
    R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s",
                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]})";

TEST(BuiltInRetryConfigTest, StreamsOfARetriedServiceGetExactEntriesAndUnaryNone) {
  const PolicyTable policies = MustParse(absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory"}], )", kRetry, "}]}"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(),
            R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory", "method": "ListItems"}, )"
            R"({"service": "shop.v1.Inventory", "method": "Sync"}, )"
            R"({"service": "shop.v1.Inventory", "method": "Upload"}], )"
            R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s", )"
            R"("backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}], )"
            R"("retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  EXPECT_THAT(config.retried_streams(),
              ElementsAre("/shop.v1.Inventory/ListItems", "/shop.v1.Inventory/Sync",
                          "/shop.v1.Inventory/Upload"));
  EXPECT_THAT(config.warnings(), IsEmpty());
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, ADefaultRetryPolicyReachesEveryLinkedStreamButNoUnaryMethod) {
  const PolicyTable policies =
      MustParse(absl::StrCat(R"({"methodConfig": [{"name": [{}], )", kRetry, "}]}"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_THAT(config.retried_streams(),
              ElementsAre("/shop.v1.Billing/Watch", "/shop.v1.Inventory/ListItems",
                          "/shop.v1.Inventory/Sync", "/shop.v1.Inventory/Upload"));
  const GrpcView view = Read(config.service_config());
  EXPECT_FALSE(view.Retries("shop.v1.Inventory", "GetItem"));
  EXPECT_FALSE(view.Retries("shop.v1.Billing", "Charge"));
  EXPECT_FALSE(view.Retries("other.Service", "Any"));
  EXPECT_TRUE(view.Retries("shop.v1.Billing", "Watch"));
  EXPECT_THAT(config.warnings(), IsEmpty());  // the default names no method
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, TheMostSpecificPolicyDecidesWhetherAStreamIsRetried) {
  // Inventory retries, but Sync has an entry of its own without retryPolicy
  // and Upload one with maxAttempts 1.
  const PolicyTable policies = MustParse(absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory"}], )", kRetry, R"(},
          {"name": [{"service": "shop.v1.Inventory", "method": "Sync"}], "timeout": "1s"},
          {"name": [{"service": "shop.v1.Inventory", "method": "Upload"}],
           "retryPolicy": {"maxAttempts": 1}}]})"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_THAT(config.retried_streams(), ElementsAre("/shop.v1.Inventory/ListItems"));
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, NothingToGiveGrpcIsAnEmptyConfig) {
  const PolicyTable policies = MustParse(absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory", "method": "GetItem"}], )",
      kRetry, R"(, "timeout": "1s"}, {"name": [{}], "breaker": {"sre": {}}}]})"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(), "");
  EXPECT_THAT(config.retried_streams(), IsEmpty());
  EXPECT_THAT(config.warnings(), IsEmpty());
  EXPECT_EQ(BuiltInRetryConfig::Build(PolicyTable(), Shop()).service_config(), "");
}

TEST(BuiltInRetryConfigTest, WritesEveryRetrySettingInGrpcsForm) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Billing", "method": "Watch"}],
      "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.0125s", "maxBackoff": "90s",
                      "backoffMultiplier": 1.5,
                      "retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE", "ABORTED"]}}],
      "retryThrottling": {"maxTokens": 250, "tokenRatio": 0.25}})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(),
            R"({"methodConfig": [{"name": [{"service": "shop.v1.Billing", "method": "Watch"}], )"
            R"("retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.0125s", )"
            R"("maxBackoff": "90s", "backoffMultiplier": 1.5, )"
            R"("retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE", "ABORTED"]}}], )"
            R"("retryThrottling": {"maxTokens": 250, "tokenRatio": 0.25}})");
}

TEST(BuiltInRetryConfigTest, CapsMaxAttemptsAtFiveForStreamsWithAWarning) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Billing"}], "retryPolicy": {"maxAttempts": 7}}]})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_THAT(config.service_config(), HasSubstr(R"("maxAttempts": 5,)"));
  EXPECT_THAT(config.warnings(),
              ElementsAre("methodConfig[0].retryPolicy.maxAttempts: 7 is capped at 5 (gRPC's "
                          "limit) for the streams gRPC's built-in retry retries "
                          "(/shop.v1.Billing/Watch); unary calls keep 7"));
}

TEST(BuiltInRetryConfigTest, WarnsOfJitterGrpcDoesNotApplyToStreams) {
  const PolicyTable jitter = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Inventory"}], "retryPolicy": {"jitter": 0.5}}]})");
  EXPECT_THAT(BuiltInRetryConfig::Build(jitter, Shop()).warnings(),
              ElementsAre("methodConfig[0].retryPolicy.jitter: gRPC's built-in retry, which "
                          "retries the streams /shop.v1.Inventory/ListItems, "
                          "/shop.v1.Inventory/Sync, /shop.v1.Inventory/Upload, backs off with "
                          "its own jitter (0.2); 0.5 applies to unary calls only"));
  const PolicyTable full = MustParse(R"({"methodConfig": [{
      "name": [{}], "retryPolicy": {"fullJitter": true}}]})");
  EXPECT_THAT(BuiltInRetryConfig::Build(full, Shop()).warnings(),
              ElementsAre("methodConfig[0].retryPolicy.fullJitter: gRPC's built-in retry, which "
                          "retries the streams /shop.v1.Billing/Watch, "
                          "/shop.v1.Inventory/ListItems, /shop.v1.Inventory/Sync and 1 more, "
                          "backs off with its own jitter (0.2); fullJitter applies to unary "
                          "calls only"));
  // No stream retried: nothing to say.
  const PolicyTable unary = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Billing", "method": "Charge"}],
      "retryPolicy": {"jitter": 0.5}}]})");
  EXPECT_THAT(BuiltInRetryConfig::Build(unary, Shop()).warnings(), IsEmpty());
}

TEST(BuiltInRetryConfigTest, WarnsOfPerAttemptTimeoutOnRetriedStreams) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Billing"}],
      "retryPolicy": {"perAttemptTimeout": "0.5s"}}]})");
  EXPECT_THAT(BuiltInRetryConfig::Build(policies, Shop()).warnings(),
              ElementsAre("methodConfig[0].retryPolicy.perAttemptTimeout: not applied to the "
                          "streams gRPC's built-in retry retries (/shop.v1.Billing/Watch); it "
                          "applies to unary calls only"));
}

// Names that match nothing linked are the loader's warning
// (UnlinkedNameWarnings(), "did you mean"), once: the config adds none of
// its own about them, and retries the streams it can find.
TEST(BuiltInRetryConfigTest, UnlinkedNamesAreNotWarnedAboutAgain) {
  const PolicyTable policies = MustParse(absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory", "method": "Gone"},
                                     {"service": "shop.v2.Inventory"},
                                     {"service": "shop.v1.Billing", "method": "Watch"}], )",
      kRetry, R"(}, {"name": [{"service": "shop.v3.Inventory"}], "timeout": "1s"}]})"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_THAT(config.warnings(), IsEmpty());
  EXPECT_THAT(config.retried_streams(), ElementsAre("/shop.v1.Billing/Watch"));
}

TEST(BuiltInRetryConfigTest, ThrottlingIsWrittenOnlyWhenAStreamIsRetried) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [{
      "name": [{"service": "shop.v1.Inventory"}], "waitForReady": true}],
      "retryThrottling": {"maxTokens": 20, "tokenRatio": 0.5}})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(),
            R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory"}], )"
            R"("waitForReady": true}]})");
  EXPECT_FALSE(Read(config.service_config()).throttling.has_value());
}

TEST(BuiltInRetryConfigTest, AStreamEntryCarriesTheWaitForReadyOfItsPolicy) {
  // Inventory's streams get exact entries; they must keep the service's
  // waitForReady, which the service entry gives GetItem.
  const PolicyTable policies = MustParse(absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory"}], "waitForReady": true, )",
      kRetry, "}]}"));
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  const GrpcView view = Read(config.service_config());
  EXPECT_EQ(view.WaitForReady("shop.v1.Inventory", "Sync"), true);
  EXPECT_EQ(view.WaitForReady("shop.v1.Inventory", "GetItem"), true);
  EXPECT_TRUE(view.Retries("shop.v1.Inventory", "Sync"));
  EXPECT_FALSE(view.Retries("shop.v1.Inventory", "GetItem"));
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, NamesWithoutWaitForReadyShadowALessSpecificOne) {
  // The default waits for ready; Inventory (service) and Billing/Charge
  // (exact) have policies without it, so gRPC must not give them the
  // default's. Inventory/GetItem has its own policy, which does not wait.
  const PolicyTable policies = MustParse(R"({"methodConfig": [
      {"name": [{}], "waitForReady": true},
      {"name": [{"service": "shop.v1.Inventory"}], "timeout": "1s"},
      {"name": [{"service": "shop.v1.Inventory", "method": "GetItem"}], "waitForReady": false},
      {"name": [{"service": "shop.v1.Billing", "method": "Charge"}], "timeout": "2s"}]})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(),
            R"({"methodConfig": [{"name": [{}], "waitForReady": true}, )"
            R"({"name": [{"service": "shop.v1.Inventory"}]}, )"
            R"({"name": [{"service": "shop.v1.Inventory", "method": "GetItem"}], )"
            R"("waitForReady": false}, )"
            R"({"name": [{"service": "shop.v1.Billing", "method": "Charge"}]}]})");
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, NoShadowWhereNothingLessSpecificWaits) {
  // Only an exact name waits: the other policies need no entry.
  const PolicyTable policies = MustParse(R"({"methodConfig": [
      {"name": [{}], "timeout": "1s"},
      {"name": [{"service": "shop.v1.Inventory"}], "timeout": "1s"},
      {"name": [{"service": "shop.v1.Inventory", "method": "Sync"}], "waitForReady": true}]})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  EXPECT_EQ(config.service_config(),
            R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory", "method": "Sync"}], )"
            R"("waitForReady": true}]})");
  ExpectMirrors(policies, Shop(), config);
}

TEST(BuiltInRetryConfigTest, MirrorsPolicySetMatchingForMixedFiles) {
  const std::string retry = kRetry;
  const std::vector<std::string> files = {
      // A service that waits, one stream of it with its own retrying policy.
      absl::StrCat(R"({"methodConfig": [{"name": [{"service": "shop.v1.Inventory"}],
                       "waitForReady": true},
                      {"name": [{"service": "shop.v1.Inventory", "method": "Sync"}], )",
                   retry, "}]}"),
      // A retrying default that waits, a service that does neither, a stream
      // of it that only waits.
      absl::StrCat(R"({"methodConfig": [{"name": [{}], "waitForReady": true, )", retry, R"(},
                      {"name": [{"service": "shop.v1.Billing"}], "timeout": "1s"},
                      {"name": [{"service": "shop.v1.Billing", "method": "Watch"}],
                       "waitForReady": true}]})"),
      // One entry naming a unary method, a stream and a service.
      absl::StrCat(R"({"methodConfig": [{"name": [
                         {"service": "shop.v1.Inventory", "method": "GetItem"},
                         {"service": "shop.v1.Inventory", "method": "ListItems"},
                         {"service": "shop.v1.Billing"}], "waitForReady": false, )",
                   retry, R"(}, {"name": [{}], "waitForReady": true}]})"),
  };
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const PolicyTable policies = MustParse(file);
    ExpectMirrors(policies, Shop(), BuiltInRetryConfig::Build(policies, Shop()));
  }
}

TEST(BuiltInRetryConfigTest, EscapesNamesFromTheFile) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [{
      "name": [{"service": "a\"b\\c"}], "waitForReady": true}]})");
  const BuiltInRetryConfig config = BuiltInRetryConfig::Build(policies, Shop());
  const GrpcView view = Read(config.service_config());
  EXPECT_THAT(view.entries, testing::Contains(testing::Key("a\"b\\c/")));
}

}  // namespace
}  // namespace resilience
