// MetricFamilies: a group's families declared at once, in catalog order,
// each handed out by its MetricId; the groups cover the catalog without
// overlapping.

#include "src/metrics/metric_families.h"

#include <cstddef>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

constexpr MetricGroup kGroups[] = {MetricGroup::kClient, MetricGroup::kServer,
                                   MetricGroup::kServerPerCaller, MetricGroup::kGlobalLimits};

// The group of each MetricId, by the catalog's order.
MetricGroup GroupOf(MetricId id) {
  if (id <= MetricId::kClientPolicyReloadFailures) return MetricGroup::kClient;
  if (id <= MetricId::kServerShadowRejections) return MetricGroup::kServer;
  if (id <= MetricId::kServerPerCallerRejections) return MetricGroup::kServerPerCaller;
  return MetricGroup::kGlobalLimits;
}

// Declaring every group in turn declares the whole catalog, in its order,
// and each group hands out the family the catalog declares for an id.
TEST(MetricFamiliesTest, TheGroupsDeclareTheCatalogInOrder) {
  PrometheusText text;
  std::vector<MetricFamilies> groups;
  for (MetricGroup group : kGroups) groups.emplace_back(text, group);
  std::vector<std::string> expected;
  for (const MetricSpec& spec : MetricCatalog::All()) {
    PrometheusText::Family& family = groups[static_cast<size_t>(GroupOf(spec.id))][spec.id];
    EXPECT_EQ(&family, &MetricCatalog::Declare(text, spec.id)) << spec.name;
    // A family shows once it has a sample (a histogram's needs buckets).
    if (spec.type == MetricType::kHistogram) continue;
    family.Sample({}, 1);
    expected.emplace_back(spec.name);
  }
  std::vector<std::string> declared;
  for (const PrometheusText::Family* family : text.families()) declared.push_back(family->name());
  EXPECT_EQ(declared, expected);
  EXPECT_TRUE(text.status().ok()) << text.status();
}

TEST(MetricFamiliesTest, HandsOutEachFamilyByItsId) {
  PrometheusText text;
  const MetricFamilies server(text, MetricGroup::kServer);
  server[MetricId::kServerInFlight].Sample({{"grpc_method", "/s.S/M"}}, 3);
  EXPECT_THAT(text.Finish(),
              ::testing::HasSubstr("grpc_resilience_server_in_flight{grpc_method=\"/s.S/M\"} 3"));
}

}  // namespace
}  // namespace resilience
