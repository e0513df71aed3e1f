// The metric catalog against docs/metrics.md: every metric the library
// exposes is documented with the same type and labels, in the same order,
// and the page names no metric the library does not have.

#include "src/metrics/metric_catalog.h"

#include <cstddef>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "grpc_resilience/prometheus_text.h"

#ifndef METRICS_DOC_PATH
#error "METRICS_DOC_PATH (docs/metrics.md in the source tree) must be defined by the build"
#endif

namespace resilience {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A label as a table row of the page states it: `name` or
// `name`=`v1`\|`v2`.
struct DocLabel {
  std::string name;
  std::vector<std::string> values;
};

// A row of one of the page's metric tables (header "| metric | type |
// labels | ...").
struct DocMetric {
  std::string name;
  std::string type;
  std::vector<DocLabel> labels;
  int line = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// The cells of a table row, split at every '|' that is not escaped ("\|"
// inside a cell), trimmed; the empty cells before the first and after the
// last '|' are dropped.
std::vector<std::string> Cells(absl::string_view row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (row[i] == '|') {
      cells.emplace_back(absl::StripAsciiWhitespace(cell));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  cells.emplace_back(absl::StripAsciiWhitespace(cell));
  if (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

// The text of the backquoted word starting at `s` (which must start with
// '`'), and `s` moved past it; empty when there is none.
std::string TakeQuoted(absl::string_view& s) {
  if (!absl::ConsumePrefix(&s, "`")) return "";
  const size_t end = s.find('`');
  if (end == absl::string_view::npos) return "";
  std::string word(s.substr(0, end));
  s.remove_prefix(end + 1);
  return word;
}

// "`grpc_method`, `reason`=`budget`\|`pushback`" -> labels. Prose after a
// label ("(the states above)") is ignored.
std::vector<DocLabel> ParseLabels(absl::string_view cell) {
  std::vector<DocLabel> labels;
  for (absl::string_view part : absl::StrSplit(cell, ", ")) {
    part = absl::StripAsciiWhitespace(part);
    DocLabel label;
    label.name = TakeQuoted(part);
    if (label.name.empty()) continue;
    if (absl::ConsumePrefix(&part, "=")) {
      do {
        std::string value = TakeQuoted(part);
        if (value.empty()) break;
        label.values.push_back(value);
      } while (absl::ConsumePrefix(&part, "\\|"));
    }
    labels.push_back(std::move(label));
  }
  return labels;
}

// Every row of every metric table of a page.
std::vector<DocMetric> ParseMetricTables(absl::string_view page) {
  std::vector<DocMetric> metrics;
  bool in_table = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    ++line_number;
    if (!absl::StartsWith(line, "|")) {
      in_table = false;
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() >= 3 && cells[0] == "metric" && cells[1] == "type" && cells[2] == "labels") {
      in_table = true;
      continue;
    }
    if (!in_table || absl::StartsWith(cells[0], "---") || cells.size() < 3) continue;
    absl::string_view name_cell = cells[0];
    DocMetric metric;
    metric.name = TakeQuoted(name_cell);
    metric.type = cells[1];
    metric.labels = ParseLabels(cells[2]);
    metric.line = line_number;
    metrics.push_back(std::move(metric));
  }
  return metrics;
}

std::string Show(const std::vector<DocLabel>& labels) {
  return absl::StrJoin(labels, ", ", [](std::string* out, const DocLabel& l) {
    absl::StrAppend(out, l.name);
    if (!l.values.empty()) absl::StrAppend(out, "=", absl::StrJoin(l.values, "|"));
  });
}

std::vector<DocLabel> LabelsOf(const MetricSpec& spec) {
  std::vector<DocLabel> labels;
  for (const MetricLabelSpec& l : spec.labels) {
    labels.push_back({std::string(l.name), {l.values.begin(), l.values.end()}});
  }
  return labels;
}

// The differences between the catalog and a page's tables, one line each.
std::vector<std::string> Differences(absl::Span<const MetricSpec> catalog,
                                     const std::vector<DocMetric>& documented) {
  std::vector<std::string> problems;
  std::vector<std::string> catalog_order;
  std::set<std::string> catalog_names;
  for (const MetricSpec& spec : catalog) {
    catalog_names.insert(std::string(spec.name));
    catalog_order.emplace_back(spec.name);
    const DocMetric* doc = nullptr;
    for (const DocMetric& d : documented) {
      if (d.name == spec.name) doc = &d;
    }
    if (doc == nullptr) {
      problems.push_back(absl::StrCat(spec.name, ": in the catalog, not documented"));
      continue;
    }
    if (doc->type != MetricTypeName(spec.type)) {
      problems.push_back(absl::StrCat(spec.name, " (line ", doc->line, "): documented as ",
                                      doc->type, ", declared as ", MetricTypeName(spec.type)));
    }
    const std::string doc_labels = Show(doc->labels);
    const std::string spec_labels = Show(LabelsOf(spec));
    if (doc_labels != spec_labels) {
      problems.push_back(absl::StrCat(spec.name, " (line ", doc->line, "): documented labels \"",
                                      doc_labels, "\", declared \"", spec_labels, "\""));
    }
  }
  std::vector<std::string> doc_order;
  for (const DocMetric& d : documented) {
    if (catalog_names.count(d.name) == 0) {
      problems.push_back(
          absl::StrCat(d.name, " (line ", d.line, "): documented, not in the catalog"));
    } else {
      doc_order.push_back(d.name);
    }
  }
  std::vector<std::string> catalog_documented;
  for (const std::string& name : catalog_order) {
    for (const std::string& d : doc_order) {
      if (d == name) catalog_documented.push_back(name);
    }
  }
  if (doc_order != catalog_documented) {
    problems.push_back(absl::StrCat("documented in the order ", absl::StrJoin(doc_order, ", "),
                                    "; the catalog's is ",
                                    absl::StrJoin(catalog_documented, ", ")));
  }
  return problems;
}

class MetricCatalogDocTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = ReadFile(METRICS_DOC_PATH);
    ASSERT_FALSE(page_.empty()) << "cannot read " << METRICS_DOC_PATH;
    documented_ = ParseMetricTables(page_);
  }
  std::string page_;
  std::vector<DocMetric> documented_;
};

// The page and the catalog agree: same metrics, types, labels (with their
// fixed values) and order.
TEST_F(MetricCatalogDocTest, PageAndCatalogAgree) {
  EXPECT_EQ(documented_.size(), MetricCatalog::All().size());
  EXPECT_THAT(Differences(MetricCatalog::All(), documented_), IsEmpty()) << METRICS_DOC_PATH;
}

// Every metric name the page's prose, examples and queries use is one of
// the catalog's (a histogram's with its _bucket, _sum or _count).
TEST_F(MetricCatalogDocTest, EveryNameOnThePageIsAMetric) {
  std::set<std::string> known;
  for (const MetricSpec& spec : MetricCatalog::All()) {
    known.insert(std::string(spec.name));
    if (spec.type == MetricType::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        known.insert(absl::StrCat(spec.name, suffix));
      }
    }
  }
  std::vector<std::string> unknown;
  constexpr char kPrefix[] = "grpc_resilience_";
  for (size_t at = page_.find(kPrefix); at != std::string::npos; at = page_.find(kPrefix, at + 1)) {
    if (at > 0 && page_[at - 1] == '/') continue;  // a path: grpc_resilience::x or a file
    size_t end = at;
    while (end < page_.size() && (absl::ascii_isalnum(page_[end]) || page_[end] == '_')) ++end;
    const std::string word = page_.substr(at, end - at);
    // Prefixes in prose ("grpc_resilience_", "grpc_resilience_client_*")
    // and CMake targets (grpc_resilience::metrics) are not metric names.
    if (word.back() == '_' || (end < page_.size() && (page_[end] == '*' || page_[end] == ':'))) {
      continue;
    }
    if (known.count(word) == 0) unknown.push_back(word);
  }
  EXPECT_THAT(unknown, IsEmpty()) << METRICS_DOC_PATH;
}

// The comparison finds each kind of drift (so that the test above can fail).
TEST(MetricCatalogDifferencesTest, FindsEachKindOfDrift) {
  constexpr absl::string_view kReasons[] = {"budget", "pushback"};
  const MetricLabelSpec labels[] = {{"grpc_method", {}}, {"reason", kReasons}};
  const MetricSpec catalog[] = {
      {MetricId::kClientCalls, "a_total", MetricType::kCounter, "A.", labels},
      {MetricId::kClientAttempts, "b_total", MetricType::kCounter, "B.", labels},
      {MetricId::kClientRetries, "c", MetricType::kGauge, "C.", labels},
  };
  const std::string page =
      "| metric | type | labels | meaning |\n"
      "|---|---|---|---|\n"
      "| `c` | gauge | `grpc_method`, `reason`=`budget`\\|`pushback` | C |\n"
      "| `a_total` | gauge | `grpc_method`, `reason`=`budget`\\|`pushback` | A |\n"
      "| `b_total` | counter | `grpc_method`, `reason`=`budget` | B |\n"
      "| `d_total` | counter | `grpc_method` | D |\n"
      "\n"
      "| `e_total` | counter | `grpc_method` | not in a metric table |\n";
  const std::vector<DocMetric> documented = ParseMetricTables(page);
  ASSERT_EQ(documented.size(), 4u);
  EXPECT_EQ(documented[0].labels[1].values, (std::vector<std::string>{"budget", "pushback"}));
  const std::vector<std::string> problems = Differences(catalog, documented);
  ASSERT_EQ(problems.size(), 4u) << absl::StrJoin(problems, "\n");
  EXPECT_THAT(problems[0], HasSubstr("a_total (line 4): documented as gauge, declared as counter"));
  EXPECT_THAT(problems[1], HasSubstr("b_total (line 5): documented labels \"grpc_method, "
                                     "reason=budget\", declared \"grpc_method, "
                                     "reason=budget|pushback\""));
  EXPECT_THAT(problems[2], HasSubstr("d_total (line 6): documented, not in the catalog"));
  EXPECT_THAT(problems[3], HasSubstr("documented in the order c, a_total, b_total"));
  EXPECT_THAT(Differences(catalog, {}), ElementsAreArray({HasSubstr("a_total: in the catalog"),
                                                          HasSubstr("b_total: in the catalog"),
                                                          HasSubstr("c: in the catalog")}));
}

// Every entry is a valid family: Declare() makes it with its type, name and
// help, and a sample with its labels (a fixed value where there are some)
// is accepted.
TEST(MetricCatalogTest, EveryEntryDeclaresAValidFamily) {
  PrometheusText text;
  for (const MetricSpec& spec : MetricCatalog::All()) {
    EXPECT_EQ(&MetricCatalog::Get(spec.id), &spec);
    PrometheusText::Family& family = MetricCatalog::Declare(text, spec.id);
    EXPECT_EQ(family.name(), spec.name);
    EXPECT_EQ(family.type(), spec.type);
    std::vector<MetricLabel> labels;
    for (const MetricLabelSpec& l : spec.labels) {
      labels.push_back({l.name, l.values.empty() ? absl::string_view("x") : l.values.back()});
    }
    if (spec.type == MetricType::kHistogram) {
      const double bounds[] = {1.0};
      const uint64_t counts[] = {1, 0};
      family.Sample(labels, HistogramData{bounds, counts, 0.5});
    } else {
      family.Sample(labels, 1);
    }
    EXPECT_EQ(family.size(), 1u) << spec.name;
  }
  EXPECT_TRUE(text.status().ok()) << text.status();
  const std::string body = text.Finish();
  for (const MetricSpec& spec : MetricCatalog::All()) {
    EXPECT_THAT(
        body, HasSubstr(absl::StrCat("# TYPE ", spec.name, " ", MetricTypeName(spec.type), "\n")));
    EXPECT_FALSE(spec.help.empty()) << spec.name;
  }
}

}  // namespace
}  // namespace resilience
