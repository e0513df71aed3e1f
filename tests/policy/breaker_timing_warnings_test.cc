// Breaker timings that can never act given the rest of the entry: the
// loader warns about each, naming the setting, its value and what makes it
// inert (src/policy/breaker_timing_warnings.h).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The warnings of loading one entry for s.S/M with `fields`; it must load.
std::vector<std::string> WarningsOf(const std::string& fields) {
  static const MethodCatalog* const methods = new MethodCatalog({{"s.S", "M"}, {"a.S", "M"}});
  PolicyTable::LoadOptions options;
  options.methods = methods;
  const std::string json =
      absl::StrCat(R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}], )", fields,
                   "}]}");
  absl::StatusOr<PolicyTable> set = PolicyTable::FromJsonString(json, options);
  EXPECT_TRUE(set.ok()) << json << ": " << set.status();
  return set.ok() ? set->warnings() : std::vector<std::string>{};
}

std::string Breaker(const std::string& three_state) {
  return absl::StrCat(R"("breaker": {"threeState": {)", three_state, "}}");
}

// A probe ends by the attempt's limit at the latest (the timeout's result
// frees its slot), so probeOverdue at or above it never lets an extra probe
// go. The limit is the earlier of timeout and retryPolicy.perAttemptTimeout.
TEST(BreakerTimingWarningsTest, ProbeOverdueNotShorterThanTheAttemptsLimit) {
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "0.5s", )",
                                      Breaker(R"("probeOverdue": "0.5s")"))),
              ElementsAre("methodConfig[0].breaker.threeState.probeOverdue: 500ms is not shorter "
                          "than methodConfig[0].timeout (500ms): every probe has a result (its "
                          "own or the timeout's) before it is overdue, so no extra probe ever "
                          "goes"));
  EXPECT_THAT(
      WarningsOf(absl::StrCat(
          R"("timeout": "2s", "retryPolicy": {"maxAttempts": 2, "perAttemptTimeout": "0.2s", )"
          R"("retryableStatusCodes": ["DEADLINE_EXCEEDED"]}, )",
          Breaker(R"("probeOverdue": "0.3s")"))),
      ElementsAre("methodConfig[0].breaker.threeState.probeOverdue: 300ms is not shorter than "
                  "methodConfig[0].retryPolicy.perAttemptTimeout (200ms): every probe has a "
                  "result (its own or the timeout's) before it is overdue, so no extra probe "
                  "ever goes"));
  // Shorter than the limit, or no limit in the file (the caller's deadline
  // is unknown), or 0 (off): nothing to say. The shipped Store: 0.4s, 0.5s.
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "0.5s", )",
                                      Breaker(R"("probeOverdue": "0.4s")"))),
              IsEmpty());
  EXPECT_THAT(WarningsOf(Breaker(R"("probeOverdue": "5s")")), IsEmpty());
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "0.5s", )",
                                      Breaker(R"("probeOverdue": "0s")"))),
              IsEmpty());
  // perAttemptTimeout longer than timeout: timeout is the limit.
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "1s", "retryPolicy": {"maxAttempts": 2, )",
                                      R"("perAttemptTimeout": "0.8s", )"
                                      R"("retryableStatusCodes": ["DEADLINE_EXCEEDED"]}, )",
                                      Breaker(R"("probeOverdue": "0.9s")"))),
              ElementsAre(testing::StartsWith(
                  "methodConfig[0].breaker.threeState.probeOverdue: 900ms is not shorter than "
                  "methodConfig[0].retryPolicy.perAttemptTimeout (800ms)")));
}

// halfOpenMaxWait re-opens when probes got no result for that long; at or
// above the attempt's limit every probe has one first. Left at its default
// it is not the user's setting: no warning.
TEST(BreakerTimingWarningsTest, HalfOpenMaxWaitNotShorterThanTheAttemptsLimit) {
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "1s", )",
                                      Breaker(R"("halfOpenMaxWait": "1s")"))),
              ElementsAre("methodConfig[0].breaker.threeState.halfOpenMaxWait: 1s is not shorter "
                          "than methodConfig[0].timeout (1s): every probe has a result (its own "
                          "or the timeout's) before it, so it never re-opens the breaker"));
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "1s", )", Breaker(""))), IsEmpty());
  EXPECT_THAT(WarningsOf(absl::StrCat(R"("timeout": "5s", )",
                                      Breaker(R"("halfOpenMaxWait": "2s")"))),
              IsEmpty());
}

// probeOverdue against the breaker's own timings: at or above
// halfOpenMaxWait the waiting probe re-opens first; below probeInterval it
// acts as probeInterval.
TEST(BreakerTimingWarningsTest, ProbeOverdueAgainstTheBreakersOwnTimings) {
  EXPECT_THAT(WarningsOf(Breaker(R"("probeOverdue": "2s", "halfOpenMaxWait": "2s")")),
              ElementsAre("methodConfig[0].breaker.threeState.probeOverdue: 2s is not shorter "
                          "than halfOpenMaxWait (2s): a probe waiting that long re-opens the "
                          "breaker first, so no extra probe ever goes"));
  EXPECT_THAT(WarningsOf(Breaker(R"("probeOverdue": "0.05s", "probeInterval": "0.1s")")),
              ElementsAre("methodConfig[0].breaker.threeState.probeOverdue: 50ms is shorter than "
                          "probeInterval (100ms): an extra probe is never closer than "
                          "probeInterval to the last one, so it acts as 100ms"));
  EXPECT_THAT(WarningsOf(Breaker(R"("probeOverdue": "0.1s", "probeInterval": "0.1s")")),
              IsEmpty());
  // The SRE breaker has none of these.
  EXPECT_THAT(WarningsOf(R"("timeout": "0.1s", "breaker": {"sre": {}})"), IsEmpty());
}

}  // namespace
}  // namespace resilience
