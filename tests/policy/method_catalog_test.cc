#include "src/policy/method_catalog.h"

#include <string>
#include <thread>
#include <vector>

#include "client_interceptors/test_service.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

MethodCatalog Shop() {
  return MethodCatalog({
      {"shop.v1.Inventory", "GetItem", false, false},
      {"shop.v1.Inventory", "ListItems", false, true},
      {"shop.v1.Inventory", "PutItem", false, false},
      {"shop.v1.Billing", "Charge", false, false},
      {"shop.v2.Billing", "Charge", false, false},
      {"audit.Log", "Append", true, false},
  });
}

PolicyTable MustParse(const std::string& json) {
  absl::StatusOr<PolicyTable> set = PolicyTable::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicyTable();
}

TEST(MethodCatalogTest, FindsMethodsByFullName) {
  const MethodCatalog catalog = Shop();
  const MethodCatalog::Method* m = catalog.Find("/shop.v1.Inventory/ListItems");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->service, "shop.v1.Inventory");
  EXPECT_EQ(m->method, "ListItems");
  EXPECT_EQ(m->full_name(), "/shop.v1.Inventory/ListItems");
  EXPECT_FALSE(m->client_streaming);
  EXPECT_TRUE(m->server_streaming);
  EXPECT_TRUE(m->streaming());
  EXPECT_FALSE(catalog.Find("/shop.v1.Inventory/GetItem")->streaming());
  EXPECT_EQ(catalog.Find("/shop.v1.Inventory/getItem"), nullptr);  // exact only
  EXPECT_EQ(catalog.Find("shop.v1.Inventory/GetItem"), nullptr);
  EXPECT_EQ(catalog.Find(""), nullptr);
  EXPECT_TRUE(catalog.HasService("shop.v1.Inventory"));
  EXPECT_FALSE(catalog.HasService("shop.v1.inventory"));
  EXPECT_FALSE(catalog.HasService(""));
}

TEST(MethodCatalogTest, ListsMethodsSortedAndOnce) {
  const MethodCatalog catalog({{"b.S", "M", false, false},
                               {"a.S", "Z", true, true},
                               {"a.S", "A", false, false},
                               {"b.S", "M", true, false}});
  std::vector<std::string> names;
  for (const auto& m : catalog.methods()) names.push_back(m.full_name());
  EXPECT_THAT(names, ElementsAre("/a.S/A", "/a.S/Z", "/b.S/M"));
  EXPECT_FALSE(catalog.Find("/b.S/M")->client_streaming);  // the first listed
}

TEST(MethodCatalogTest, LinkedHasTheGeneratedServicesWithTheirCallTypes) {
  // Referenced, so that the generated code is linked in.
  ASSERT_NE(resilience::test::Req::descriptor(), nullptr);
  const MethodCatalog& linked = MethodCatalog::Linked();
  EXPECT_EQ(&linked, &MethodCatalog::Linked());
  EXPECT_TRUE(linked.HasService("resilience.test.TestService"));
  struct Expected {
    const char* name;
    bool client_streaming, server_streaming;
  };
  for (const Expected& e : {Expected{"/resilience.test.TestService/Unary", false, false},
                            Expected{"/resilience.test.TestService/ClientStream", true, false},
                            Expected{"/resilience.test.TestService/ServerStream", false, true},
                            Expected{"/resilience.test.TestService/Bidi", true, true}}) {
    const MethodCatalog::Method* m = linked.Find(e.name);
    ASSERT_NE(m, nullptr) << e.name;
    EXPECT_EQ(m->client_streaming, e.client_streaming) << e.name;
    EXPECT_EQ(m->server_streaming, e.server_streaming) << e.name;
  }
  // The policy file's schema is linked too, but has no service.
  EXPECT_FALSE(linked.HasService("resilience.v1.PolicyFile"));
}

TEST(MethodCatalogTest, LinkedIsBuiltOnceAcrossThreads) {
  std::vector<const MethodCatalog*> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &MethodCatalog::Linked(); });
  }
  for (std::thread& t : threads) t.join();
  for (const MethodCatalog* c : seen) EXPECT_EQ(c, seen[0]);
}

TEST(MethodCatalogTest, NearestServiceFindsTyposCaseAndPackages) {
  const MethodCatalog catalog = Shop();
  EXPECT_THAT(catalog.NearestService("shop.Inventory"), Optional(std::string("shop.v1.Inventory")));
  EXPECT_THAT(catalog.NearestService("Inventory"), Optional(std::string("shop.v1.Inventory")));
  EXPECT_THAT(catalog.NearestService("shop.v1.inventory"),
              Optional(std::string("shop.v1.Inventory")));
  EXPECT_THAT(catalog.NearestService("shop.v1.Inventroy"),
              Optional(std::string("shop.v1.Inventory")));
  EXPECT_THAT(catalog.NearestService("shop.v2.Inventory"),
              Optional(std::string("shop.v1.Inventory")));
  // Both Billings are one edit away from v3: the first by name wins.
  EXPECT_THAT(catalog.NearestService("shop.v3.Billing"), Optional(std::string("shop.v1.Billing")));
  EXPECT_THAT(catalog.NearestService("shop.v2.Biling"), Optional(std::string("shop.v2.Billing")));
  EXPECT_EQ(catalog.NearestService("payments.Ledger"), std::nullopt);
  // Another package with the same service name.
  EXPECT_THAT(catalog.NearestService("x.Log"), Optional(std::string("audit.Log")));
}

TEST(MethodCatalogTest, NearestMethodFindsTyposAndCase) {
  const MethodCatalog catalog = Shop();
  EXPECT_THAT(catalog.NearestMethod("shop.v1.Inventory", "getItem"),
              Optional(std::string("/shop.v1.Inventory/GetItem")));
  EXPECT_THAT(catalog.NearestMethod("shop.v1.Inventory", "GetItm"),
              Optional(std::string("/shop.v1.Inventory/GetItem")));
  EXPECT_THAT(catalog.NearestMethod("shop.v1.Inventory", "ListItem"),
              Optional(std::string("/shop.v1.Inventory/ListItems")));
  EXPECT_THAT(catalog.NearestMethod("shop.v1.Inventory", "LsitItems"),
              Optional(std::string("/shop.v1.Inventory/ListItems")));
  EXPECT_EQ(catalog.NearestMethod("shop.v1.Inventory", "DeleteEverything"), std::nullopt);
  EXPECT_EQ(catalog.NearestMethod("shop.v1.Inventory", "Get"), std::nullopt);
  EXPECT_EQ(catalog.NearestMethod("shop.Inventory", "GetItem"), std::nullopt);  // not linked
}

TEST(MethodCatalogTest, WarnsOfNamesThatMatchNothingLinked) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [
      {"name": [{"service": "shop.Inventory"}, {"service": "payments.Ledger"}], "timeout": "1s"},
      {"name": [{"service": "shop.v1.Inventory", "method": "getItem"},
                {"service": "shop.v1.Inventory", "method": "DeleteEverything"},
                {"service": "shop.v1.Inventory", "method": "PutItem"},
                {"service": "shop.v1.Billing"}, {}], "timeout": "1s"},
      {"name": [{"service": "shop.v3.Billing", "method": "Charge"}], "timeout": "1s"}]})");
  EXPECT_THAT(
      UnlinkedNameWarnings(policies, Shop()),
      ElementsAre(
          "methodConfig[0].name[0]: service \"shop.Inventory\" is not linked into this process "
          "(did you mean \"shop.v1.Inventory\"?)",
          "methodConfig[0].name[1]: service \"payments.Ledger\" is not linked into this process",
          "methodConfig[1].name[0]: method \"getItem\" is not in service shop.v1.Inventory (did "
          "you mean \"/shop.v1.Inventory/GetItem\"?)",
          "methodConfig[1].name[1]: method \"DeleteEverything\" is not in service "
          "shop.v1.Inventory",
          "methodConfig[2].name[0]: service \"shop.v3.Billing\" is not linked into this process "
          "(did you mean \"shop.v1.Billing\"?)"));
}

TEST(MethodCatalogTest, NoWarningsWhenEveryNameIsLinked) {
  const PolicyTable policies = MustParse(R"({"methodConfig": [
      {"name": [{"service": "shop.v1.Inventory", "method": "GetItem"}, {"service": "audit.Log"},
                {}], "timeout": "1s"}]})");
  EXPECT_THAT(UnlinkedNameWarnings(policies, Shop()), IsEmpty());
  EXPECT_THAT(UnlinkedNameWarnings(PolicyTable(), Shop()), IsEmpty());
}

// The loader checks every name against the services linked into the
// process by default: a typo loads with a warning naming the nearest linked
// name, and strict mode refuses the file.
TEST(MethodCatalogTest, TheLoaderWarnsOfNamesThatMatchNothingLinked) {
  const std::string json = R"({"methodConfig": [
      {"name": [{"service": "resilience.test.TestServce", "method": "Unary"}],
       "timeout": "1s"},
      {"name": [{"service": "resilience.test.TestService", "method": "unary"},
                {"service": "resilience.test.TestService", "method": "Bidi"}],
       "timeout": "1s"}]})";
  absl::StatusOr<PolicyTable> set = PolicyTable::FromJsonString(json);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(
      set->warnings(),
      ElementsAre("methodConfig[0].name[0]: service \"resilience.test.TestServce\" is not linked "
                  "into this process (did you mean \"resilience.test.TestService\"?)",
                  "methodConfig[1].name[0]: method \"unary\" is not in service "
                  "resilience.test.TestService (did you mean "
                  "\"/resilience.test.TestService/Unary\"?)"));
  absl::StatusOr<PolicyTable> strict =
      PolicyTable::FromJsonString(json, PolicyTable::LoadOptions{/*strict=*/true});
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(std::string(strict.status().message()),
              ::testing::StartsWith("strict mode: 2 warning(s): methodConfig[0].name[0]"));
  // Every name linked: nothing to say.
  absl::StatusOr<PolicyTable> fine = PolicyTable::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                            "timeout": "1s"}]})",
      PolicyTable::LoadOptions{/*strict=*/true});
  ASSERT_TRUE(fine.ok()) << fine.status();
}

}  // namespace
}  // namespace resilience
