// File: tests/prometheus_cpp/exposition_samples.h
//
// An exposition text (ours or prometheus-cpp's TextSerializer's) read back
// as values, to compare two texts sample by sample whatever their order and
// number formatting: each sample's name and labels (in order; a histogram's
// `le` as a number) to its value, and the # HELP and # TYPE lines.

#ifndef GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_EXPOSITION_SAMPLES_H_
#define GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_EXPOSITION_SAMPLES_H_

#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "grpc_resilience/prometheus_text.h"

namespace resilience::testing {

struct ExpositionSamples {
  // "name{a=\"x\",le=\"0.5\"}" (le as PrometheusText::FormatValue() writes
  // it) to the value.
  std::map<std::string, double> samples;
  // The "# HELP ..." and "# TYPE ..." lines.
  std::set<std::string> heads;
};

// The sample key of `series` (the part of a sample line before its value).
inline std::string SeriesKey(absl::string_view series) {
  const size_t brace = series.find('{');
  if (brace == absl::string_view::npos) return std::string(series);
  std::string key = absl::StrCat(series.substr(0, brace), "{");
  absl::string_view rest = series.substr(brace + 1);
  bool first = true;
  while (!rest.empty() && rest[0] != '}') {
    if (rest[0] == ',') rest.remove_prefix(1);
    const size_t eq = rest.find("=\"");
    const absl::string_view name = rest.substr(0, eq);
    rest.remove_prefix(eq + 2);
    std::string value;
    while (!rest.empty() && rest[0] != '"') {  // escapes are kept as written
      if (rest[0] == '\\' && rest.size() > 1) {
        value.push_back(rest[0]);
        rest.remove_prefix(1);
      }
      value.push_back(rest[0]);
      rest.remove_prefix(1);
    }
    rest.remove_prefix(1);  // the closing quote
    double number;
    if (name == "le" && value != "+Inf" && absl::SimpleAtod(value, &number)) {
      value = PrometheusText::FormatValue(number);
    }
    absl::StrAppend(&key, first ? "" : ",", name, "=\"", value, "\"");
    first = false;
  }
  return absl::StrCat(key, "}");
}

// ReadExposition()
//
// `text` as samples; a test failure for a line it cannot read or a series
// it has twice.
inline ExpositionSamples ReadExposition(const std::string& text) {
  ExpositionSamples out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) {
      out.heads.emplace(line);
      continue;
    }
    const size_t space = line.rfind(' ');
    double value = 0;
    const absl::string_view number = line.substr(space + 1);
    if (space == absl::string_view::npos ||
        !(absl::SimpleAtod(number, &value) || number == "Nan" || number == "NaN")) {
      ADD_FAILURE() << "cannot read the sample line: " << line;
      continue;
    }
    if (!out.samples.emplace(SeriesKey(line.substr(0, space)), value).second) {
      ADD_FAILURE() << "a series given twice: " << line;
    }
  }
  return out;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_PROMETHEUS_CPP_EXPOSITION_SAMPLES_H_
