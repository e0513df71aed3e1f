// File: tests/testing/metrics_test_fixture.h
//
// What the client's and the server's metrics tests share
// (tests/client_interceptors/client_metrics_test.cc,
// tests/server_interceptors/server_metrics_test.cc): a policy written
// inline, the exposition text of a ClientResilience or ServerResilience,
// that text without what depends on timing, and promtool's check of it.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_METRICS_TEST_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_TESTING_METRICS_TEST_FIXTURE_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/policy.h"
#include "tests/testing/promtool.h"

namespace resilience::testing {

// MetricsTest
//
// A fixture over `Base`, the side's own fixture (which sets up its server
// and channels), for tests of that side's metrics.
//
// Example:
//   class ServerMetricsTest : public MetricsTest<::testing::TestWithParam<bool>> {
//    protected:
//     std::string Render() { return RenderMetrics(*state_); }
//     ...
//   };
//   TEST_P(ServerMetricsTest, Text) {
//     ...
//     EXPECT_EQ(WithoutTimings(Render(), "grpc_resilience_server_handler_duration_seconds"),
//               R"(...)");
//   }
template <typename Base>
class MetricsTest : public Base {
 protected:
  // Policies()
  //
  // The policies of `json`; a test failure and no policies when they do
  // not load.
  static PolicySet Policies(const std::string& json) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(json);
    EXPECT_TRUE(policies.ok()) << policies.status();
    return policies.ok() ? *std::move(policies) : PolicySet();
  }

  // RenderMetrics()
  //
  // The metrics of `resilience` (a ClientResilience or a ServerResilience)
  // as exposition text; a test failure if anything was left out of it.
  template <typename Resilience>
  static std::string RenderMetrics(Resilience& resilience) {
    PrometheusText text;
    resilience.AppendMetrics(text);
    EXPECT_TRUE(text.status().ok()) << text.status();
    return text.Finish();
  }

  // WithoutTimings()
  //
  // The lines of `text` without the buckets and sums of the histogram
  // family `histogram`, which depend on how long the calls took.
  static std::string WithoutTimings(const std::string& text, absl::string_view histogram) {
    const std::string buckets = absl::StrCat(histogram, "_bucket");
    const std::string sum = absl::StrCat(histogram, "_sum");
    std::string out;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, buckets) || absl::StartsWith(line, sum)) continue;
      absl::StrAppend(&out, line, "\n");
    }
    return out;
  }

  // LinesStartingWith()
  //
  // How many lines of `text` start with `prefix`.
  static int LinesStartingWith(const std::string& text, absl::string_view prefix) {
    int lines = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, prefix)) ++lines;
    }
    return lines;
  }
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_METRICS_TEST_FIXTURE_H_
