/// \file include/grpc_resilience/prometheus_text.h
///
/// A builder of Prometheus' text exposition format, version 0.0.4: what a
/// /metrics endpoint answers a scrape with. Pure C++ and Abseil; implemented in
/// src/metrics (library grpc_resilience::metrics).

#ifndef GRPC_RESILIENCE_PROMETHEUS_TEXT_H_
#define GRPC_RESILIENCE_PROMETHEUS_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// The type of a metric family, as its # TYPE line says.
enum class MetricType {
  kCounter,    ///< only goes up; its name ends in "_total"
  kGauge,      ///< goes up and down
  kHistogram   ///< observations counted in buckets, with their sum and count
};

/// "counter", "gauge", "histogram": the word of the # TYPE line.
GRPC_RESILIENCE_EXPORT absl::string_view MetricTypeName(MetricType type);

/// One label of a sample: {"grpc_method", "/cache.v1.CacheService/Get"}.
struct GRPC_RESILIENCE_EXPORT MetricLabel {
  absl::string_view name;   ///< the label's name, e.g. "grpc_method"
  absl::string_view value;  ///< its value, any UTF-8 (escaped when rendered)
};

/// The counts of one histogram, as PrometheusText::Family::Sample() takes them.
struct GRPC_RESILIENCE_EXPORT HistogramData {
  /// The finite bucket bounds, strictly ascending (+Inf is implied).
  absl::Span<const double> upper_bounds;
  /// Per bucket, not cumulative: upper_bounds.size() + 1 counts, the last one
  /// for the observations above the last bound.
  absl::Span<const uint64_t> bucket_counts;
  /// The sum of the observations.
  double sum = 0;
};

/// PrometheusText
///
/// Collects metric families and their samples, and renders them with
/// Finish() as exposition text:
///
/// \code{.unparsed}
///   # HELP <name> <help>
///   # TYPE <name> counter|gauge|histogram
///   <name>{label="value",...} <value>
/// \endcode
///
/// The rules of the format are kept whatever the order of the calls: a
/// family's HELP and TYPE lines come once, before its samples, which are
/// contiguous (families may be filled in any interleaving, e.g. one method
/// at a time over all families); families come in the order they were first
/// declared and samples in the order they were added, so the same calls give
/// the same text. A histogram family named X renders X_bucket{...,le="..."}
/// lines (cumulative, ending with le="+Inf"), X_sum and X_count. Label values
/// are escaped (backslash, double quote, newline) and invalid UTF-8 in them
/// is replaced by U+FFFD; HELP text is escaped likewise (backslash, newline).
/// Values are written exactly: integers as integers, doubles in the shortest
/// form that reads back the same ("0.0005", "2.5e-05", "1e+06", "+Inf",
/// "NaN"; see FormatValue()).
///
/// Our naming rules are enforced: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*
/// and counters end in "_total"; label names match [a-zA-Z_][a-zA-Z0-9_]*
/// and do not start with "__"; "le" is reserved in histograms. What breaks a
/// rule (a bad name, a family redeclared with another type or help, names
/// that collide with a histogram's _bucket/_sum/_count, a sample whose
/// label set the family already has, a negative counter, a histogram whose
/// bounds and counts do not fit) is left out of the text, so that the text
/// always parses, and reported by status().
///
/// Families with no samples are left out (nothing to say yet).
///
/// Built with Recording::kSamplesToo, it also keeps every sample it renders
/// as values (Family::samples(), families()), for a consumer that wants the
/// metrics rather than the text: PrometheusCollectable
/// (prometheus_collectable.h) hands them to prometheus-cpp.
///
/// Not thread-safe: build one per scrape.
///
/// Example:
/// \code
///   PrometheusText text;
///   PrometheusText::Family& calls = text.Counter(
///       "grpc_resilience_client_calls_total", "Calls the application made.");
///   PrometheusText::Family& duration = text.Histogram(
///       "grpc_resilience_client_call_duration_seconds", "Call latency.");
///   for (const auto& [method, state] : methods) {
///     calls.Sample({{"grpc_method", method}, {"grpc_code", "OK"}}, state.ok);
///     LatencyHistogramSnapshot s = state.latency.Snapshot();
///     duration.Sample({{"grpc_method", method}},
///                     {LatencyHistogramSnapshot::UpperBounds(), s.bucket_counts, s.sum_seconds});
///   }
///   std::string body = text.Finish();
/// \endcode
class GRPC_RESILIENCE_EXPORT PrometheusText {
 public:
  /// The Content-Type of the text.
  static constexpr absl::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  /// What a PrometheusText keeps besides the text.
  enum class Recording {
    kTextOnly,    ///< the text only (the default)
    kSamplesToo   ///< also each sample's values (Family::samples())
  };

  /// A sample as it was accepted (with Recording::kSamplesToo): what
  /// Finish() renders, as values. Label values are unescaped, with invalid
  /// UTF-8 replaced by U+FFFD as in the text.
  struct RecordedSample {
    /// The labels, {name, value}, in the order given.
    std::vector<std::pair<std::string, std::string>> labels;
    /// A counter's or a gauge's value.
    double value = 0;
    /// A histogram's finite bucket bounds, ascending (+Inf is implied).
    std::vector<double> upper_bounds;
    /// A histogram's cumulative counts: one per bound, then the +Inf
    /// bucket's (the count of all observations).
    std::vector<uint64_t> cumulative_counts;
    /// A histogram's sum of observations.
    double sum = 0;
  };

  /// Family
  ///
  /// The samples of one metric family. Owned by its PrometheusText, valid as
  /// long as it is.
  class Family {
   public:
    Family(const Family&) = delete;
    Family& operator=(const Family&) = delete;

    /// Sample()
    ///
    /// Adds the sample of a counter or a gauge with `labels` (rendered in
    /// the order given). Integers are written exactly; a counter's value
    /// must not be negative or NaN.
    ///@{
    Family& Sample(absl::Span<const MetricLabel> labels, double value);
    template <typename Int,
              std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
    Family& Sample(absl::Span<const MetricLabel> labels, Int value) {
      bool negative = false;
      if constexpr (std::is_signed_v<Int>) negative = value < 0;
      return AddScalar(labels, absl::StrCat(value), static_cast<double>(value), negative);
    }
    ///@}

    /// Sample()
    ///
    /// Adds the samples of a histogram with `labels`: its buckets (made
    /// cumulative here), sum and count.
    Family& Sample(absl::Span<const MetricLabel> labels, const HistogramData& histogram);

    /// The family's metric name.
    const std::string& name() const { return name_; }
    /// Counter, gauge or histogram.
    MetricType type() const { return type_; }
    /// Samples added (a histogram counts once).
    size_t size() const { return samples_; }
    /// The help text, as declared (unescaped).
    const std::string& help() const { return help_; }
    /// The samples added, as values: empty unless the PrometheusText was
    /// built with Recording::kSamplesToo.
    const std::vector<RecordedSample>& samples() const { return recorded_; }

   private:
    friend class PrometheusText;
    Family(PrometheusText* owner, std::string name, MetricType type, std::string help);

    Family& AddScalar(absl::Span<const MetricLabel> labels, absl::string_view value,
                      double numeric, bool negative);
    // The sample to record, when recording; null otherwise.
    RecordedSample* Record(absl::Span<const MetricLabel> labels);
    // Renders `labels` as `name="value",...` into *rendered and registers
    // their set; false (and an error reported) when they are invalid or
    // the set was seen before.
    bool AcceptLabels(absl::Span<const MetricLabel> labels, std::string* rendered);
    void Fail(absl::string_view message);

    PrometheusText* const owner_;  // null: a family that keeps nothing
    const std::string name_;
    const MetricType type_;
    const std::string help_;
    std::string lines_;
    size_t samples_ = 0;
    absl::flat_hash_set<std::string> label_sets_;
    std::vector<RecordedSample> recorded_;
  };

  /// A builder that keeps the text only.
  PrometheusText();
  /// A builder that keeps what `recording` says.
  explicit PrometheusText(Recording recording);
  ~PrometheusText();
  PrometheusText(const PrometheusText&) = delete;
  PrometheusText& operator=(const PrometheusText&) = delete;

  /// Counter() / Gauge() / Histogram()
  ///
  /// The family `name`, declared on the first call; a later call with the
  /// same name, type and help returns the same family. A family that cannot
  /// be declared (see the rules above) is one that keeps nothing.
  ///@{
  Family& Counter(absl::string_view name, absl::string_view help);
  Family& Gauge(absl::string_view name, absl::string_view help);
  Family& Histogram(absl::string_view name, absl::string_view help);
  ///@}

  /// Finish()
  ///
  /// The exposition text of everything added so far; ends with a newline
  /// unless it is empty.
  std::string Finish() const;

  /// families()
  ///
  /// The families Finish() renders (those with samples), in its order.
  std::vector<const Family*> families() const;

  /// status()
  ///
  /// OK, or InvalidArgument naming the first thing that was left out (and
  /// how many more were).
  absl::Status status() const;

  /// FormatValue()
  ///
  /// A value as the text writes it: the shortest digits that read back as
  /// `value`, in exponent form below 1e-4 and from 1e+06 up; "+Inf", "-Inf",
  /// "NaN".
  static std::string FormatValue(double value);

 private:
  Family& Declare(absl::string_view name, MetricType type, absl::string_view help);
  void Fail(std::string message);

  const Recording recording_;
  std::vector<std::unique_ptr<Family>> families_;
  absl::flat_hash_map<std::string, Family*> by_name_;
  // Every sample name a family renders (a histogram's three), to its family.
  absl::flat_hash_map<std::string, Family*> by_sample_name_;
  Family discard_;
  std::string first_error_;
  size_t errors_ = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_PROMETHEUS_TEXT_H_
