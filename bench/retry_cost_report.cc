#include "bench/retry_cost_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/retry_cost_server.h"

namespace retry_cost {
namespace {

std::vector<double> PerRound(const ConfigRounds& c, const Metric& m) {
  std::vector<double> values;
  for (const RoundResult& r : c.rounds) values.push_back(m.value(r));
  return values;
}


// ---------------------------------------------------------------------------
// JSON output.

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string RatioJson(const Ratio& r) {
  return absl::StrCat(R"({"median": )", JsonNumber(r.median), R"(, "min": )", JsonNumber(r.min),
                      R"(, "max": )", JsonNumber(r.max), "}");
}

std::string ConfigJson(const Phase& phase, const ConfigRounds& c) {
  std::vector<std::string> fields;
  for (const Metric& m : phase.metrics) {
    const std::vector<double> values = PerRound(c, m);
    std::vector<std::string> metric = {
        absl::StrCat(R"("median": )", JsonNumber(Median(values))),
        absl::StrCat(R"("per_round": [)",
                     absl::StrJoin(values, ", ",
                                   [](std::string* out, double v) { out->append(JsonNumber(v)); }),
                     "]")};
    if (m.ratios) {
      for (const std::string& ref : phase.references) {
        metric.push_back(absl::StrCat(JsonString("vs_" + ref), ": ",
                                      RatioJson(RatioTo(c, phase.Config(ref), m))));
      }
    }
    fields.push_back(absl::StrCat(JsonString(m.key), ": {", absl::StrJoin(metric, ", "), "}"));
  }
  int64_t calls = 0, ok = 0;
  for (const RoundResult& r : c.rounds) {
    calls += r.calls;
    ok += r.ok;
  }
  fields.push_back(absl::StrCat(R"("total_calls": )", calls, R"(, "total_ok": )", ok));
  if (c.counters) {
    const ChainCounters& k = *c.counters;
    fields.push_back(absl::StrCat(R"("chain_counters": {"calls": )", k.calls, R"(, "attempts": )",
                                  k.attempts, R"(, "retries": )", k.retries,
                                  R"(, "rejected_by_breaker": )", k.rejected_by_breaker,
                                  R"(, "retry_budget_exhausted": )", k.retry_budget_exhausted,
                                  R"(, "attempt_timeouts": )", k.attempt_timeouts, "}"));
  }
  return absl::StrCat(JsonString(c.name), ": {", absl::StrJoin(fields, ", "), "}");
}

std::string PhaseJson(const Phase& phase) {
  std::vector<std::string> configs;
  for (const ConfigRounds& c : phase.configs) configs.push_back(ConfigJson(phase, c));
  std::vector<std::string> notes;
  for (const std::string& n : phase.notes) notes.push_back(JsonString(n));
  return absl::StrCat(JsonString(phase.key), ": {\"title\": ", JsonString(phase.title),
                      ", \"callers\": ", phase.callers, ", \"configs\": {",
                      absl::StrJoin(configs, ", "), "}, \"notes\": [", absl::StrJoin(notes, ", "),
                      "]}");
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double CallsPerSecond(const RoundResult& r) { return r.calls / r.seconds; }
double CpuUsPerCall(const RoundResult& r) { return 1e6 * r.cpu_seconds / r.calls; }
double CpuUsPerOkCall(const RoundResult& r) { return 1e6 * r.cpu_seconds / r.ok; }
double SwitchesPerCall(const RoundResult& r) {
  return static_cast<double>(r.context_switches) / r.calls;
}
double SuccessRatio(const RoundResult& r) { return static_cast<double>(r.ok) / r.calls; }
double RejectedRatio(const RoundResult& r) {
  return static_cast<double>(r.rejected_locally) / r.calls;
}
double P50Ms(const RoundResult& r) { return r.p50_ms; }
double P99Ms(const RoundResult& r) { return r.p99_ms; }

// The ratio of `config` to `reference` in each round; its median and range.
Ratio RatioTo(const ConfigRounds& config, const ConfigRounds& reference, const Metric& m) {
  std::vector<double> ratios;
  for (size_t r = 0; r < config.rounds.size() && r < reference.rounds.size(); ++r) {
    ratios.push_back(m.value(config.rounds[r]) / m.value(reference.rounds[r]));
  }
  if (ratios.empty()) return {std::nan(""), std::nan(""), std::nan("")};
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return {Median(ratios), *lo, *hi};
}


std::string FormatRatio(const Ratio& r) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", r.median, r.min, r.max);
}

void PrintPhase(const Phase& phase) {
  std::printf("\n### %s\n\n", phase.title.c_str());
  std::vector<std::string> header = {"config"};
  for (const Metric& m : phase.metrics) {
    header.push_back(m.header);
    if (!m.ratios) continue;
    for (const std::string& ref : phase.references) header.push_back(absl::StrCat("vs ", ref));
  }
  std::printf("| %s |\n", absl::StrJoin(header, " | ").c_str());
  std::string separator = "|";
  for (size_t i = 0; i < header.size(); ++i) separator += "---|";
  std::printf("%s\n", separator.c_str());
  for (const ConfigRounds& c : phase.configs) {
    std::vector<std::string> cells = {c.name};
    for (const Metric& m : phase.metrics) {
      cells.push_back(absl::StrFormat("%.*f", m.precision, Median(PerRound(c, m))));
      if (!m.ratios) continue;
      for (const std::string& ref : phase.references) {
        cells.push_back(FormatRatio(RatioTo(c, phase.Config(ref), m)));
      }
    }
    std::printf("| %s |\n", absl::StrJoin(cells, " | ").c_str());
  }
  std::printf("\n");
  for (const ConfigRounds& c : phase.configs) {
    if (!c.counters) continue;
    const ChainCounters& k = *c.counters;
    std::printf(
        "- %s, chain counters over the rounds: %lld calls, %lld attempts, %lld retries, %lld "
        "rejected by breaker, %lld retry budget exhausted, %lld attempt timeouts\n",
        c.name.c_str(), static_cast<long long>(k.calls), static_cast<long long>(k.attempts),
        static_cast<long long>(k.retries), static_cast<long long>(k.rejected_by_breaker),
        static_cast<long long>(k.retry_budget_exhausted),
        static_cast<long long>(k.attempt_timeouts));
  }
  for (const std::string& note : phase.notes) std::printf("- %s\n", note.c_str());
}

absl::Status WriteJson(const std::string& path, const LoadSettings& load, double failure_rate,
                       const std::vector<Phase>& phases) {
  std::vector<std::string> parts;
  for (const Phase& p : phases) parts.push_back(PhaseJson(p));
  const std::string json = absl::StrCat(
      "{\"settings\": {\"seconds\": ", JsonNumber(absl::ToDoubleSeconds(load.round_length)),
      ", \"rounds\": ", load.rounds, ", \"failure_rate\": ", JsonNumber(failure_rate),
      ", \"call_deadline_s\": 5}, \"phases\": {", absl::StrJoin(parts, ", "), "}}\n");
  return WriteFile(path, json);
}

}  // namespace retry_cost
