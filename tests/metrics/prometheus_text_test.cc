// PrometheusText: the exact text, escaping, values, and the rules it keeps.

#include "grpc_resilience/prometheus_text.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "src/metrics/latency_histogram.h"
#include "gtest/gtest.h"
#include "tests/metrics/sample_exposition.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PrometheusTextTest, SmallExpositionExactly) {
  PrometheusText text;
  PrometheusText::Family& calls = text.Counter("demo_calls_total", "Calls made.");
  PrometheusText::Family& in_flight = text.Gauge("demo_in_flight", "Calls in flight.");
  PrometheusText::Family& latency = text.Histogram("demo_duration_seconds", "Call latency.");
  calls.Sample({{"grpc_method", "/a.B/Get"}, {"grpc_code", "OK"}}, 3);
  in_flight.Sample({}, 2);
  const double bounds[] = {0.1, 1};
  const uint64_t counts[] = {1, 2, 3};
  latency.Sample({{"grpc_method", "/a.B/Get"}}, HistogramData{bounds, counts, 7.25});
  // Back to the first family: its samples still come out together.
  calls.Sample({{"grpc_method", "/a.B/Put"}, {"grpc_code", "UNAVAILABLE"}}, uint64_t{1});
  latency.Sample({}, HistogramData{bounds, counts, 0.5});
  text.Gauge("demo_unused", "No samples: left out.");

  EXPECT_EQ(text.Finish(),
            "# HELP demo_calls_total Calls made.\n"
            "# TYPE demo_calls_total counter\n"
            "demo_calls_total{grpc_method=\"/a.B/Get\",grpc_code=\"OK\"} 3\n"
            "demo_calls_total{grpc_method=\"/a.B/Put\",grpc_code=\"UNAVAILABLE\"} 1\n"
            "# HELP demo_in_flight Calls in flight.\n"
            "# TYPE demo_in_flight gauge\n"
            "demo_in_flight 2\n"
            "# HELP demo_duration_seconds Call latency.\n"
            "# TYPE demo_duration_seconds histogram\n"
            "demo_duration_seconds_bucket{grpc_method=\"/a.B/Get\",le=\"0.1\"} 1\n"
            "demo_duration_seconds_bucket{grpc_method=\"/a.B/Get\",le=\"1\"} 3\n"
            "demo_duration_seconds_bucket{grpc_method=\"/a.B/Get\",le=\"+Inf\"} 6\n"
            "demo_duration_seconds_sum{grpc_method=\"/a.B/Get\"} 7.25\n"
            "demo_duration_seconds_count{grpc_method=\"/a.B/Get\"} 6\n"
            "demo_duration_seconds_bucket{le=\"0.1\"} 1\n"
            "demo_duration_seconds_bucket{le=\"1\"} 3\n"
            "demo_duration_seconds_bucket{le=\"+Inf\"} 6\n"
            "demo_duration_seconds_sum 0.5\n"
            "demo_duration_seconds_count 6\n");
  EXPECT_TRUE(text.status().ok()) << text.status();
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_EQ(latency.size(), 2u);
}

TEST(PrometheusTextTest, EmptyTextIsEmpty) {
  PrometheusText text;
  EXPECT_EQ(text.Finish(), "");
  text.Counter("nothing_total", "Nothing yet.");
  EXPECT_EQ(text.Finish(), "");
  EXPECT_TRUE(text.status().ok());
}

// A LatencyHistogram's snapshot comes out cumulative over the fixed bounds.
TEST(PrometheusTextTest, LatencyHistogramIsCumulative) {
  LatencyHistogram histogram;
  histogram.Observe(absl::Microseconds(200));  // le 0.0005
  histogram.Observe(absl::Milliseconds(4));    // le 0.005
  histogram.Observe(absl::Milliseconds(4));
  histogram.Observe(absl::Seconds(2));   // le 2.5
  histogram.Observe(absl::Seconds(60));  // +Inf
  const LatencyHistogramSnapshot s = histogram.Snapshot();
  PrometheusText text;
  text.Histogram("rpc_seconds", "Latency.")
      .Sample({{"m", "x"}},
              HistogramData{LatencyHistogram::UpperBounds(), s.bucket_counts, s.sum_seconds});
  EXPECT_EQ(text.Finish(),
            "# HELP rpc_seconds Latency.\n"
            "# TYPE rpc_seconds histogram\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.0005\"} 1\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.001\"} 1\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.0025\"} 1\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.005\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.01\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.025\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.05\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.1\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.25\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"0.5\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"1\"} 3\n"
            "rpc_seconds_bucket{m=\"x\",le=\"2.5\"} 4\n"
            "rpc_seconds_bucket{m=\"x\",le=\"5\"} 4\n"
            "rpc_seconds_bucket{m=\"x\",le=\"10\"} 4\n"
            "rpc_seconds_bucket{m=\"x\",le=\"+Inf\"} 5\n"
            "rpc_seconds_sum{m=\"x\"} 62.0082\n"
            "rpc_seconds_count{m=\"x\"} 5\n");
}

TEST(PrometheusTextTest, LabelValuesAndHelpAreEscaped) {
  PrometheusText text;
  text.Gauge("g", "Back\\slash, \"quotes\" and\nnew line.").Sample({{"v", "a\\b\"c\nd"}}, 1);
  EXPECT_EQ(text.Finish(),
            "# HELP g Back\\\\slash, \"quotes\" and\\nnew line.\n"
            "# TYPE g gauge\n"
            "g{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(PrometheusTextTest, InvalidUtf8BecomesReplacementCharacter) {
  PrometheusText text;
  PrometheusText::Family& g = text.Gauge("g", "");
  g.Sample({{"v", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"}}, 1);  // valid: kept
  g.Sample({{"v", "bad\xFF"}}, 2);
  g.Sample({{"v", "cut\xC3"}}, 3);
  g.Sample({{"v", "overlong\xC0\xAF"}}, 4);
  g.Sample({{"v", "surrogate\xED\xA0\x80"}}, 5);
  EXPECT_EQ(text.Finish(),
            "# TYPE g gauge\n"
            "g{v=\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"} 1\n"
            "g{v=\"bad\xEF\xBF\xBD\"} 2\n"
            "g{v=\"cut\xEF\xBF\xBD\"} 3\n"
            "g{v=\"overlong\xEF\xBF\xBD\xEF\xBF\xBD\"} 4\n"
            "g{v=\"surrogate\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"} 5\n");
  EXPECT_TRUE(text.status().ok()) << text.status();
}

TEST(PrometheusTextTest, FormatValue) {
  EXPECT_EQ(PrometheusText::FormatValue(0), "0");
  EXPECT_EQ(PrometheusText::FormatValue(1), "1");
  EXPECT_EQ(PrometheusText::FormatValue(-1), "-1");
  EXPECT_EQ(PrometheusText::FormatValue(100), "100");
  EXPECT_EQ(PrometheusText::FormatValue(7.25), "7.25");
  EXPECT_EQ(PrometheusText::FormatValue(0.1), "0.1");
  EXPECT_EQ(PrometheusText::FormatValue(0.0005), "0.0005");
  EXPECT_EQ(PrometheusText::FormatValue(0.0001), "0.0001");
  EXPECT_EQ(PrometheusText::FormatValue(0.00005), "5e-05");
  EXPECT_EQ(PrometheusText::FormatValue(2.5e-05), "2.5e-05");
  EXPECT_EQ(PrometheusText::FormatValue(123456), "123456");
  EXPECT_EQ(PrometheusText::FormatValue(999999.5), "999999.5");
  EXPECT_EQ(PrometheusText::FormatValue(1e6), "1e+06");
  EXPECT_EQ(PrometheusText::FormatValue(1234567), "1.234567e+06");
  EXPECT_EQ(PrometheusText::FormatValue(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(PrometheusText::FormatValue(1e300), "1e+300");
  EXPECT_EQ(PrometheusText::FormatValue(-0.025), "-0.025");
  EXPECT_EQ(PrometheusText::FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PrometheusText::FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(PrometheusText::FormatValue(std::nan("")), "NaN");
  // Shortest, yet exact: reads back as the same double.
  for (double v : {0.1 + 0.2, 3.141592653589793, 62.0082, 1e-7, 123456.789}) {
    EXPECT_EQ(std::stod(PrometheusText::FormatValue(v)), v) << v;
  }
}

TEST(PrometheusTextTest, IntegersAreExact) {
  PrometheusText text;
  text.Counter("big_total", "").Sample({}, std::numeric_limits<uint64_t>::max());
  text.Gauge("neg", "").Sample({}, int64_t{-5});
  text.Gauge("dbl", "").Sample({}, 2.5);
  EXPECT_EQ(text.Finish(),
            "# TYPE big_total counter\n"
            "big_total 18446744073709551615\n"
            "# TYPE neg gauge\n"
            "neg -5\n"
            "# TYPE dbl gauge\n"
            "dbl 2.5\n");
}

TEST(PrometheusTextTest, RedeclaringReturnsTheSameFamily) {
  PrometheusText text;
  PrometheusText::Family& a = text.Counter("x_total", "X.");
  PrometheusText::Family& b = text.Counter("x_total", "X.");
  EXPECT_EQ(&a, &b);
  a.Sample({{"k", "1"}}, 1);
  b.Sample({{"k", "2"}}, 2);
  EXPECT_EQ(text.Finish(),
            "# HELP x_total X.\n"
            "# TYPE x_total counter\n"
            "x_total{k=\"1\"} 1\n"
            "x_total{k=\"2\"} 2\n");
  EXPECT_TRUE(text.status().ok());
}

// Whatever breaks a rule is left out and reported; the rest still renders.
TEST(PrometheusTextTest, RuleBreakersAreLeftOutAndReported) {
  struct Case {
    const char* what;
    void (*misuse)(PrometheusText&);
    const char* message;
  };
  const Case cases[] = {
      {"bad metric name", [](PrometheusText& t) { t.Gauge("1abc", "").Sample({}, 1); },
       "metric name \"1abc\" is not valid"},
      {"metric name with a dash", [](PrometheusText& t) { t.Gauge("a-b", "").Sample({}, 1); },
       "metric name \"a-b\" is not valid"},
      {"counter without _total", [](PrometheusText& t) { t.Counter("calls", "").Sample({}, 1); },
       "calls: a counter's name must end in _total"},
      {"another type", [](PrometheusText& t) { t.Gauge("ok_total", "").Sample({}, 1); },
       "ok_total: declared as a counter and as a gauge"},
      {"another help", [](PrometheusText& t) { t.Counter("ok_total", "Other.").Sample({}, 1); },
       "ok_total: declared with two help texts"},
      {"bad label name",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"a.b", "x"}}, 1);
       },
       "ok_total: label name \"a.b\" is not valid"},
      {"reserved label name",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"__name__", "x"}}, 1);
       },
       "ok_total: label name \"__name__\" is not valid"},
      {"empty label name",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"", "x"}}, 1);
       },
       "ok_total: label name \"\" is not valid"},
      {"label twice",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"a", "x"}, {"a", "y"}}, 1);
       },
       "ok_total: label \"a\" given twice"},
      {"same labels again",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"m", "1"}}, 5);
       },
       "ok_total: a second sample with the labels {m=\"1\"}"},
      {"same labels in another order",
       [](PrometheusText& t) {
         PrometheusText::Family& f = t.Gauge("two", "");
         f.Sample({{"a", "1"}, {"b", "2"}}, 1);
         f.Sample({{"b", "2"}, {"a", "1"}}, 1);
       },
       "two: a second sample with the labels {b=\"2\",a=\"1\"}"},
      {"negative counter",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"m", "2"}}, -1);
       },
       "ok_total: a counter cannot be -1"},
      {"negative double counter",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"m", "2"}}, -0.5);
       },
       "ok_total: a counter cannot be -0.5"},
      {"NaN counter",
       [](PrometheusText& t) {
         t.Counter("ok_total", "Ok.").Sample({{"m", "2"}}, std::nan(""));
       },
       "ok_total: a counter cannot be NaN"},
      {"number for a histogram", [](PrometheusText& t) { t.Histogram("h", "").Sample({}, 1); },
       "h: a histogram's sample needs HistogramData"},
      {"HistogramData for a gauge",
       [](PrometheusText& t) {
         const double bounds[] = {1};
         const uint64_t counts[] = {0, 0};
         t.Gauge("g", "").Sample({}, HistogramData{bounds, counts, 0});
       },
       "g: a gauge takes a number, not HistogramData"},
      {"counts that do not fit",
       [](PrometheusText& t) {
         const double bounds[] = {1, 2};
         const uint64_t counts[] = {0, 0};
         t.Histogram("h", "").Sample({}, HistogramData{bounds, counts, 0});
       },
       "h: 2 bounds need 3 bucket counts, got 2"},
      {"bounds not ascending",
       [](PrometheusText& t) {
         const double bounds[] = {2, 1};
         const uint64_t counts[] = {0, 0, 0};
         t.Histogram("h", "").Sample({}, HistogramData{bounds, counts, 0});
       },
       "h: bucket bounds must be finite and strictly ascending"},
      {"infinite bound",
       [](PrometheusText& t) {
         const double bounds[] = {1, std::numeric_limits<double>::infinity()};
         const uint64_t counts[] = {0, 0, 0};
         t.Histogram("h", "").Sample({}, HistogramData{bounds, counts, 0});
       },
       "h: bucket bounds must be finite and strictly ascending"},
      {"le in a histogram",
       [](PrometheusText& t) {
         const double bounds[] = {1};
         const uint64_t counts[] = {0, 0};
         t.Histogram("h", "").Sample({{"le", "1"}}, HistogramData{bounds, counts, 0});
       },
       "h: label name \"le\" is reserved in a histogram"},
      {"gauge named like a histogram's sum",
       [](PrometheusText& t) {
         t.Histogram("lat", "");
         t.Gauge("lat_sum", "").Sample({}, 1);
       },
       "lat_sum: its samples would be named lat_sum, as those of lat"},
      {"histogram over a gauge's name",
       [](PrometheusText& t) {
         t.Gauge("size_count", "").Sample({}, 1);
         t.Histogram("size", "");
       },
       "size: its samples would be named size_count, as those of size_count"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PrometheusText text;
    text.Counter("ok_total", "Ok.").Sample({{"m", "1"}}, 1);
    c.misuse(text);
    EXPECT_EQ(text.status(), absl::InvalidArgumentError(c.message));
    // The valid sample is there; nothing of the misuse is.
    const std::string out = text.Finish();
    EXPECT_THAT(out, HasSubstr("ok_total{m=\"1\"} 1\n"));
    for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, "#")) continue;
      EXPECT_TRUE(absl::StartsWith(line, "ok_total{m=\"1\"}") || absl::StartsWith(line, "two") ||
                  absl::StartsWith(line, "size_count"))
          << line;
    }
  }
}

TEST(PrometheusTextTest, StatusCountsTheProblems) {
  PrometheusText text;
  text.Gauge("bad name", "");
  text.Gauge("also bad", "");
  text.Gauge("still bad", "");
  EXPECT_EQ(text.status(), absl::InvalidArgumentError(
                               "metric name \"bad name\" is not valid (and 2 more left out)"));
}

// The families of docs/metrics.md, filled one method at a time, come out
// with each family's samples together, each HELP and TYPE once.
TEST(PrometheusTextTest, SampleExpositionKeepsFamiliesContiguous) {
  absl::Status status;
  const std::string out = testing::RenderSampleExposition(&status);
  ASSERT_TRUE(status.ok()) << status;
  std::string current;  // the family of the lines being read
  std::set<std::string> seen;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      const std::vector<std::string> parts = absl::StrSplit(line, ' ');
      ASSERT_EQ(parts.size(), 4u) << line;
      current = parts[2];
      EXPECT_TRUE(seen.insert(current).second) << "second TYPE line for " << current;
      continue;
    }
    if (absl::StartsWith(line, "#")) continue;
    const absl::string_view name = line.substr(0, line.find_first_of("{ "));
    EXPECT_TRUE(name == current || name == current + "_bucket" || name == current + "_sum" ||
                name == current + "_count")
        << line << " outside its family " << current;
  }
  EXPECT_EQ(seen.size(), 13u);
  EXPECT_THAT(out, HasSubstr("grpc_resilience_client_calls_total{grpc_method=\"/cache.v1."
                             "CacheService/Get\",grpc_code=\"OTHER\"} 1\n"));
}

// With Recording::kSamplesToo each accepted sample is kept as values, label
// values unescaped (invalid UTF-8 replaced as in the text), histograms
// cumulative with the +Inf count last; rejected samples and empty families
// are not. Without it, the text only.
TEST(PrometheusTextTest, RecordsSamplesOnlyWhenAsked) {
  const double bounds[] = {0.5, 1};
  const uint64_t counts[] = {1, 2, 3};
  const auto fill = [&](PrometheusText& text) {
    text.Gauge("idle", "Nothing yet.");
    PrometheusText::Family& calls = text.Counter("calls_total", "Calls.");
    calls.Sample({{"method", "a\"b\n\xff"}}, uint64_t{7});
    calls.Sample({{"method", "a\"b\n\xff"}}, uint64_t{8});  // the same labels: left out
    text.Histogram("latency_seconds", "Latency.").Sample({}, HistogramData{bounds, counts, 2.5});
  };
  PrometheusText recorded(PrometheusText::Recording::kSamplesToo);
  fill(recorded);
  const std::vector<const PrometheusText::Family*> families = recorded.families();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0]->name(), "calls_total");
  EXPECT_EQ(families[0]->help(), "Calls.");
  ASSERT_EQ(families[0]->samples().size(), 1u);
  const PrometheusText::RecordedSample& call = families[0]->samples()[0];
  ASSERT_EQ(call.labels.size(), 1u);
  EXPECT_EQ(call.labels[0].first, "method");
  EXPECT_EQ(call.labels[0].second, "a\"b\n\xEF\xBF\xBD");
  EXPECT_EQ(call.value, 7);
  ASSERT_EQ(families[1]->samples().size(), 1u);
  const PrometheusText::RecordedSample& latency = families[1]->samples()[0];
  EXPECT_THAT(latency.upper_bounds, ElementsAre(0.5, 1));
  EXPECT_THAT(latency.cumulative_counts, ElementsAre(1u, 3u, 6u));
  EXPECT_EQ(latency.sum, 2.5);

  PrometheusText text_only;
  fill(text_only);
  EXPECT_EQ(text_only.Finish(), recorded.Finish());
  ASSERT_EQ(text_only.families().size(), 2u);
  EXPECT_TRUE(text_only.families()[0]->samples().empty());
}

}  // namespace
}  // namespace resilience
