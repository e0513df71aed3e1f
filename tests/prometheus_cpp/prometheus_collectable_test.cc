// PrometheusCollectable: the families it gives prometheus-cpp are the
// library's own exposition (PrometheusText), sample by sample, for a client
// and a server after real calls; they are the metrics of docs/metrics.md;
// what the text leaves out is left out and reported.

#include "grpc_resilience/prometheus_collectable.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/prometheus_cpp/exposition_samples.h"
#include "tests/prometheus_cpp/resilient_cache.h"

#ifndef METRICS_DOC_PATH
#error "METRICS_DOC_PATH (docs/metrics.md in the source tree) must be defined by the build"
#endif

namespace resilience {
namespace {

using ::resilience::testing::ExpositionSamples;
using ::resilience::testing::ReadExposition;
using ::resilience::testing::ResilientCache;
using ::testing::HasSubstr;

std::string Serialize(const std::vector<prometheus::MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

// The series of `samples`, without their values.
std::set<std::string> Series(const ExpositionSamples& samples) {
  std::set<std::string> out;
  for (const auto& [series, value] : samples.samples) out.insert(series);
  return out;
}

class PrometheusCollectableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cache_.Start());
    cache_.MakeCalls(30);
  }
  ResilientCache cache_;
};

// Every family, HELP and TYPE line and sample of the text, with the same
// value, and nothing else: counters, gauges and histograms (15 buckets).
TEST_F(PrometheusCollectableTest, FamiliesAreTheExpositionSampleBySample) {
  PrometheusText text(PrometheusText::Recording::kSamplesToo);
  cache_.AppendMetrics(text);
  ASSERT_TRUE(text.status().ok()) << text.status();
  const std::string ours = text.Finish();
  const std::string theirs = Serialize(PrometheusCollectable::ToMetricFamilies(text));

  const ExpositionSamples expected = ReadExposition(ours);
  const ExpositionSamples got = ReadExposition(theirs);
  EXPECT_EQ(got.heads, expected.heads) << theirs;
  EXPECT_EQ(Series(got), Series(expected)) << theirs;
  for (const auto& [series, value] : expected.samples) {
    auto it = got.samples.find(series);
    if (it == got.samples.end()) continue;  // reported above
    EXPECT_NEAR(it->second, value, std::abs(value) * 1e-15) << series;
  }
  // What was compared: all three types, calls of more than one outcome.
  EXPECT_THAT(ours, HasSubstr("# TYPE grpc_resilience_client_calls_total counter"));
  EXPECT_THAT(ours, HasSubstr("# TYPE grpc_resilience_server_in_flight gauge"));
  EXPECT_THAT(ours, HasSubstr("# TYPE grpc_resilience_client_call_duration_seconds histogram"));
  EXPECT_THAT(ours, HasSubstr("grpc_code=\"NOT_FOUND\""));
  EXPECT_THAT(ours, HasSubstr("grpc_code=\"UNAVAILABLE\""));
  EXPECT_GT(expected.samples.size(), 100u);
  for (const prometheus::MetricFamily& family : PrometheusCollectable::ToMetricFamilies(text)) {
    if (family.type != prometheus::MetricType::Histogram) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      EXPECT_EQ(metric.histogram.bucket.size(), LatencyHistogramSnapshot::kNumBounds)
          << family.name;
    }
  }
}

// Collect() asks its source each time: after more calls, more counted.
TEST_F(PrometheusCollectableTest, CollectRendersTheSourceEachTime) {
  PrometheusCollectable collectable([&](PrometheusText& text) { cache_.AppendMetrics(text); });
  const auto client_calls = [&] {
    double total = 0;
    for (const prometheus::MetricFamily& family : collectable.Collect()) {
      if (family.name != "grpc_resilience_client_calls_total") continue;
      for (const prometheus::ClientMetric& metric : family.metric) total += metric.counter.value;
    }
    return total;
  };
  EXPECT_EQ(client_calls(), 60);
  cache_.MakeCalls(5);
  EXPECT_EQ(client_calls(), 70);
  EXPECT_TRUE(collectable.status().ok()) << collectable.status();

  // The same families, in the same order, as the text of the same objects.
  PrometheusText text;
  cache_.AppendMetrics(text);
  std::vector<std::string> text_families;
  for (const PrometheusText::Family* family : text.families()) {
    text_families.push_back(family->name());
  }
  std::vector<std::string> collected;
  for (const prometheus::MetricFamily& family : collectable.Collect()) {
    collected.push_back(family.name);
  }
  EXPECT_EQ(collected, text_families);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// docs/metrics.md's tables: metric name to its type and label names, in order.
struct DocRow {
  std::string type;
  std::vector<std::string> labels;
};
std::map<std::string, DocRow> DocumentedMetrics(const std::string& page) {
  std::map<std::string, DocRow> rows;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (!absl::StartsWith(line, "| `grpc_resilience_")) continue;
    std::vector<std::string> cells = absl::StrSplit(line, " | ");
    if (cells.size() < 3) continue;
    DocRow row;
    row.type = std::string(absl::StripAsciiWhitespace(cells[1]));
    for (absl::string_view label : absl::StrSplit(cells[2], ", ")) {
      label = absl::StripAsciiWhitespace(label);
      if (!absl::ConsumePrefix(&label, "`")) continue;
      row.labels.emplace_back(label.substr(0, label.find('`')));
    }
    std::string name(absl::StripPrefix(cells[0], "| `"));
    rows[name.substr(0, name.find('`'))] = row;
  }
  return rows;
}

// Each family is a metric of docs/metrics.md with its type, and each of its
// samples has the labels the page lists, in that order.
TEST_F(PrometheusCollectableTest, FamiliesAreTheMetricsOfTheDocs) {
  const std::map<std::string, DocRow> documented = DocumentedMetrics(ReadFile(METRICS_DOC_PATH));
  ASSERT_GT(documented.size(), 30u) << "cannot read the tables of " << METRICS_DOC_PATH;
  PrometheusCollectable collectable([&](PrometheusText& text) { cache_.AppendMetrics(text); });
  const std::vector<prometheus::MetricFamily> families = collectable.Collect();
  EXPECT_GT(families.size(), 10u);
  const std::map<prometheus::MetricType, std::string> type_names = {
      {prometheus::MetricType::Counter, "counter"},
      {prometheus::MetricType::Gauge, "gauge"},
      {prometheus::MetricType::Histogram, "histogram"}};
  for (const prometheus::MetricFamily& family : families) {
    auto row = documented.find(family.name);
    if (row == documented.end()) {
      ADD_FAILURE() << family.name << " is not in " << METRICS_DOC_PATH;
      continue;
    }
    EXPECT_EQ(type_names.at(family.type), row->second.type) << family.name;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::vector<std::string> labels;
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        labels.push_back(label.name);
      }
      EXPECT_EQ(labels, row->second.labels) << family.name;
    }
  }
}

// What the text leaves out (a counter without _total, a label set given
// twice) is left out of the families too, and status() says what.
TEST(PrometheusCollectableErrorsTest, WhatTheTextLeavesOutIsLeftOutAndReported) {
  PrometheusCollectable collectable([](PrometheusText& text) {
    text.Counter("calls", "No _total.").Sample({}, 1);
    PrometheusText::Family& good = text.Gauge("in_flight", "Calls now.");
    good.Sample({{"method", "A"}}, 2);
    good.Sample({{"method", "A"}}, 3);
  });
  const std::vector<prometheus::MetricFamily> families = collectable.Collect();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "in_flight");
  ASSERT_EQ(families[0].metric.size(), 1u);
  EXPECT_EQ(families[0].metric[0].gauge.value, 2);
  EXPECT_FALSE(collectable.status().ok());
  EXPECT_THAT(std::string(collectable.status().message()), HasSubstr("calls"));
  EXPECT_THAT(std::string(collectable.status().message()), HasSubstr("1 more"));
}

}  // namespace
}  // namespace resilience
