// File: src/metrics/prometheus_text.cc

#include "grpc_resilience/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "src/metrics/printable_text.h"

namespace resilience {
namespace {

// Separates names and values in a label set's key: a byte valid UTF-8 never
// has, and label names are ASCII.
constexpr char kKeySeparator = '\xff';

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(absl::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_' || c == ':';
  });
}

// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus).
bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0]) || absl::StartsWith(name, "__")) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_'; });
}

// Appends `text` escaped for a label value (quote_too) or a HELP line:
// backslash, newline (and double quote) get a backslash; invalid UTF-8
// becomes U+FFFD, one per bad byte. Without `escape`, only the latter.
void AppendEscaped(absl::string_view text, bool quote_too, std::string* out,
                   bool escape = true) {
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\\' && escape) {
      out->append("\\\\");
    } else if (c == '\n' && escape) {
      out->append("\\n");
    } else if (c == '"' && quote_too && escape) {
      out->append("\\\"");
    } else {
      const size_t length = PrintableText::Utf8Length(text, i);
      if (length == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD
        ++i;
      } else {
        out->append(text.data() + i, length);
        i += length;
      }
      continue;
    }
    ++i;
  }
}

}  // namespace

absl::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string PrometheusText::FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back as `value`, as d.ddde±XX.
  char buffer[64];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const absl::string_view scientific(buffer, static_cast<size_t>(result.ptr - buffer));
  const size_t e = scientific.find('e');
  int exponent = 0;
  {
    absl::string_view digits = scientific.substr(e + 2);
    std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
    if (scientific[e + 1] == '-') exponent = -exponent;
  }
  if (exponent < -4 || exponent >= 6) return std::string(scientific);

  const bool negative = scientific[0] == '-';
  std::string digits;
  for (char c : scientific.substr(negative ? 1 : 0, e - (negative ? 1 : 0))) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
  } else {
    const size_t integer_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= integer_digits) {
      out.append(digits);
      out.append(integer_digits - digits.size(), '0');
    } else {
      out.append(digits, 0, integer_digits);
      out.push_back('.');
      out.append(digits, integer_digits, std::string::npos);
    }
  }
  return out;
}

// --- Family ----------------------------------------------------------------

PrometheusText::Family::Family(PrometheusText* owner, std::string name, MetricType type,
                               std::string help)
    : owner_(owner), name_(std::move(name)), type_(type), help_(std::move(help)) {}

void PrometheusText::Family::Fail(absl::string_view message) {
  if (owner_ != nullptr) owner_->Fail(absl::StrCat(name_, ": ", message));
}

bool PrometheusText::Family::AcceptLabels(absl::Span<const MetricLabel> labels,
                                          std::string* rendered) {
  std::vector<std::pair<absl::string_view, std::string>> escaped;
  escaped.reserve(labels.size());
  for (const MetricLabel& label : labels) {
    if (!IsValidLabelName(label.name)) {
      Fail(absl::StrCat("label name \"", label.name, "\" is not valid"));
      return false;
    }
    if (type_ == MetricType::kHistogram && label.name == "le") {
      Fail("label name \"le\" is reserved in a histogram");
      return false;
    }
    std::string value;
    AppendEscaped(label.value, /*quote_too=*/true, &value);
    escaped.emplace_back(label.name, std::move(value));
  }
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (i > 0) rendered->push_back(',');
    absl::StrAppend(rendered, escaped[i].first, "=\"", escaped[i].second, "\"");
  }
  // The set's key: the labels sorted by name (the order does not make
  // another series).
  std::sort(escaped.begin(), escaped.end());
  std::string key;
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (i > 0 && escaped[i].first == escaped[i - 1].first) {
      Fail(absl::StrCat("label \"", escaped[i].first, "\" given twice"));
      return false;
    }
    absl::StrAppend(&key, escaped[i].first, absl::string_view(&kKeySeparator, 1), escaped[i].second,
                    absl::string_view(&kKeySeparator, 1));
  }
  if (!label_sets_.insert(std::move(key)).second) {
    Fail(absl::StrCat("a second sample with the labels {", *rendered, "}"));
    return false;
  }
  return true;
}

PrometheusText::RecordedSample* PrometheusText::Family::Record(
    absl::Span<const MetricLabel> labels) {
  if (owner_->recording_ != Recording::kSamplesToo) return nullptr;
  RecordedSample& sample = recorded_.emplace_back();
  sample.labels.reserve(labels.size());
  for (const MetricLabel& label : labels) {
    std::string value;
    AppendEscaped(label.value, /*quote_too=*/true, &value, /*escape=*/false);
    sample.labels.emplace_back(std::string(label.name), std::move(value));
  }
  return &sample;
}

PrometheusText::Family& PrometheusText::Family::AddScalar(absl::Span<const MetricLabel> labels,
                                                          absl::string_view value, double numeric,
                                                          bool negative) {
  if (owner_ == nullptr) return *this;
  if (type_ == MetricType::kHistogram) {
    Fail("a histogram's sample needs HistogramData");
    return *this;
  }
  if (type_ == MetricType::kCounter && negative) {
    Fail(absl::StrCat("a counter cannot be ", value));
    return *this;
  }
  std::string rendered;
  if (!AcceptLabels(labels, &rendered)) return *this;
  if (rendered.empty()) {
    absl::StrAppend(&lines_, name_, " ", value, "\n");
  } else {
    absl::StrAppend(&lines_, name_, "{", rendered, "} ", value, "\n");
  }
  if (RecordedSample* sample = Record(labels)) sample->value = numeric;
  ++samples_;
  return *this;
}

PrometheusText::Family& PrometheusText::Family::Sample(absl::Span<const MetricLabel> labels,
                                                       double value) {
  return AddScalar(labels, FormatValue(value), value, std::isnan(value) || value < 0);
}

PrometheusText::Family& PrometheusText::Family::Sample(absl::Span<const MetricLabel> labels,
                                                       const HistogramData& histogram) {
  if (owner_ == nullptr) return *this;
  if (type_ != MetricType::kHistogram) {
    Fail(absl::StrCat("a ", MetricTypeName(type_), " takes a number, not HistogramData"));
    return *this;
  }
  const absl::Span<const double> bounds = histogram.upper_bounds;
  if (histogram.bucket_counts.size() != bounds.size() + 1) {
    Fail(absl::StrCat(bounds.size(), " bounds need ", bounds.size() + 1, " bucket counts, got ",
                      histogram.bucket_counts.size()));
    return *this;
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      Fail("bucket bounds must be finite and strictly ascending");
      return *this;
    }
  }
  std::string rendered;
  if (!AcceptLabels(labels, &rendered)) return *this;
  const absl::string_view separator = rendered.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += histogram.bucket_counts[i];
    absl::StrAppend(&lines_, name_, "_bucket{", rendered, separator, "le=\"",
                    FormatValue(bounds[i]), "\"} ", cumulative, "\n");
  }
  cumulative += histogram.bucket_counts[bounds.size()];
  absl::StrAppend(&lines_, name_, "_bucket{", rendered, separator, "le=\"+Inf\"} ", cumulative,
                  "\n");
  const std::string braced = rendered.empty() ? "" : absl::StrCat("{", rendered, "}");
  absl::StrAppend(&lines_, name_, "_sum", braced, " ", FormatValue(histogram.sum), "\n");
  absl::StrAppend(&lines_, name_, "_count", braced, " ", cumulative, "\n");
  if (RecordedSample* sample = Record(labels)) {
    sample->upper_bounds.assign(bounds.begin(), bounds.end());
    uint64_t running = 0;
    for (uint64_t count : histogram.bucket_counts) {
      running += count;
      sample->cumulative_counts.push_back(running);
    }
    sample->sum = histogram.sum;
  }
  ++samples_;
  return *this;
}

// --- PrometheusText --------------------------------------------------------

PrometheusText::PrometheusText() : PrometheusText(Recording::kTextOnly) {}

PrometheusText::PrometheusText(Recording recording)
    : recording_(recording), discard_(nullptr, "", MetricType::kGauge, "") {}

PrometheusText::~PrometheusText() = default;

PrometheusText::Family& PrometheusText::Counter(absl::string_view name, absl::string_view help) {
  return Declare(name, MetricType::kCounter, help);
}

PrometheusText::Family& PrometheusText::Gauge(absl::string_view name, absl::string_view help) {
  return Declare(name, MetricType::kGauge, help);
}

PrometheusText::Family& PrometheusText::Histogram(absl::string_view name, absl::string_view help) {
  return Declare(name, MetricType::kHistogram, help);
}

PrometheusText::Family& PrometheusText::Declare(absl::string_view name, MetricType type,
                                                absl::string_view help) {
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    Family& family = *it->second;
    if (family.type_ != type) {
      Fail(absl::StrCat(name, ": declared as a ", MetricTypeName(family.type_), " and as a ",
                        MetricTypeName(type)));
      return discard_;
    }
    if (family.help_ != help) {
      Fail(absl::StrCat(name, ": declared with two help texts"));
      return discard_;
    }
    return family;
  }
  if (!IsValidMetricName(name)) {
    Fail(absl::StrCat("metric name \"", name, "\" is not valid"));
    return discard_;
  }
  if (type == MetricType::kCounter && !absl::EndsWith(name, "_total")) {
    Fail(absl::StrCat(name, ": a counter's name must end in _total"));
    return discard_;
  }
  std::vector<std::string> sample_names;
  if (type == MetricType::kHistogram) {
    sample_names = {absl::StrCat(name, "_bucket"), absl::StrCat(name, "_sum"),
                    absl::StrCat(name, "_count")};
  }
  sample_names.emplace_back(name);  // a histogram's own name, too: no family may take it
  for (const std::string& sample_name : sample_names) {
    if (auto it = by_sample_name_.find(sample_name); it != by_sample_name_.end()) {
      Fail(absl::StrCat(name, ": its samples would be named ", sample_name, ", as those of ",
                        it->second->name_));
      return discard_;
    }
  }
  families_.push_back(
      std::unique_ptr<Family>(new Family(this, std::string(name), type, std::string(help))));
  Family* family = families_.back().get();
  by_name_.emplace(family->name_, family);
  for (std::string& sample_name : sample_names) {
    by_sample_name_.emplace(std::move(sample_name), family);
  }
  return *family;
}

void PrometheusText::Fail(std::string message) {
  if (errors_++ == 0) first_error_ = std::move(message);
}

std::string PrometheusText::Finish() const {
  size_t size = 0;
  for (const auto& family : families_) {
    size += family->lines_.size() + 2 * family->name_.size() + family->help_.size() + 32;
  }
  std::string out;
  out.reserve(size);
  for (const auto& family : families_) {
    if (family->samples_ == 0) continue;
    if (!family->help_.empty()) {
      absl::StrAppend(&out, "# HELP ", family->name_, " ");
      AppendEscaped(family->help_, /*quote_too=*/false, &out);
      out.push_back('\n');
    }
    absl::StrAppend(&out, "# TYPE ", family->name_, " ", MetricTypeName(family->type_), "\n",
                    family->lines_);
  }
  return out;
}

std::vector<const PrometheusText::Family*> PrometheusText::families() const {
  std::vector<const Family*> out;
  for (const auto& family : families_) {
    if (family->samples_ > 0) out.push_back(family.get());
  }
  return out;
}

absl::Status PrometheusText::status() const {
  if (errors_ == 0) return absl::OkStatus();
  if (errors_ == 1) return absl::InvalidArgumentError(first_error_);
  return absl::InvalidArgumentError(
      absl::StrCat(first_error_, " (and ", errors_ - 1, " more left out)"));
}

}  // namespace resilience
