// retry_cost_bench's summaries: medians over rounds, per-round ratios, and
// the comparisons ("phases") printed as Markdown tables and written as JSON.

#ifndef GRPC_RESILIENCE_BENCH_RETRY_COST_REPORT_H_
#define GRPC_RESILIENCE_BENCH_RETRY_COST_REPORT_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "bench/retry_cost_load.h"

namespace retry_cost {

double Median(std::vector<double> v);

// A figure of a round, as a table column shows it.
struct Metric {
  const char* key;     // in the JSON
  const char* header;  // in the table
  double (*value)(const RoundResult&);
  int precision;
  bool ratios;  // also show its ratios to the phase's reference configs
};

double CallsPerSecond(const RoundResult& r);
double CpuUsPerCall(const RoundResult& r);
double CpuUsPerOkCall(const RoundResult& r);
double SwitchesPerCall(const RoundResult& r);
double SuccessRatio(const RoundResult& r);
double RejectedRatio(const RoundResult& r);
double P50Ms(const RoundResult& r);
double P99Ms(const RoundResult& r);

struct Ratio {
  double median, min, max;
};

Ratio RatioTo(const ConfigRounds& config, const ConfigRounds& reference, const Metric& m);

// One comparison: its configurations' rounds, the figures shown, the
// configurations the ratios are taken to, and the checks' findings.
struct Phase {
  std::string key;
  std::string title;
  int callers = 0;
  std::vector<ConfigRounds> configs;
  std::vector<Metric> metrics;
  std::vector<std::string> references;
  std::vector<std::string> notes;

  const ConfigRounds& Config(absl::string_view name) const {
    for (const ConfigRounds& c : configs) {
      if (c.name == name) return c;
    }
    std::fprintf(stderr, "internal error: no config %s\n", std::string(name).c_str());
    std::abort();
  }
};

std::string FormatRatio(const Ratio& r);

// The phase as a Markdown table, its chain counters and notes, on stdout.
void PrintPhase(const Phase& phase);

// Every phase, with the settings of the run, as one JSON object in `path`.
absl::Status WriteJson(const std::string& path, const LoadSettings& load, double failure_rate,
                       const std::vector<Phase>& phases);

}  // namespace retry_cost

#endif  // GRPC_RESILIENCE_BENCH_RETRY_COST_REPORT_H_
