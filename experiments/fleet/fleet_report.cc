#include "experiments/fleet/fleet_report.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fleet {
namespace {

double Frac(int64_t n, int64_t d) { return d > 0 ? static_cast<double>(n) / d : 1.0; }

std::string Recovery(const RunResult& r) {
  return r.recovered ? absl::StrFormat("%.1f s", r.recovery_seconds) : "NEVER";
}

}  // namespace

std::string ToTable(const std::vector<RunResult>& runs) {
  std::string out = absl::StrFormat("%-14s %-22s %5s %8s %9s %8s %8s %8s %8s %8s %8s\n", "trigger",
                                    "policy", "load", "baseline", "recovery", "amp_trig", "amp_win",
                                    "amp_peak", "amp_all", "good_win", "good_end");
  for (const RunResult& r : runs) {
    absl::StrAppendFormat(&out, "%-14s %-22s %5.2f %8.4f %9s %8.3f %8.3f %8.3f %8.3f %8.4f %8.4f\n",
                          TriggerName(r.config.trigger.kind), r.policy, r.config.load, r.baseline,
                          Recovery(r), r.trigger_amplification, r.window_amplification, r.peak_amplification,
                          r.amplification, r.window_goodput, r.final_goodput);
  }
  return out;
}

std::string BoundaryTable(const std::vector<RunResult>& runs, double max_load) {
  // (trigger, policy) in first-seen order.
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> cells;  // first fail, worst
  for (const RunResult& r : runs) {
    const auto key = std::make_pair(TriggerName(r.config.trigger.kind), r.policy);
    if (cells.find(key) == cells.end()) {
      keys.push_back(key);
      cells[key] = {-1, 0};
    }
    if (r.config.load > max_load + 1e-9) continue;
    auto& [first_fail, worst] = cells[key];
    if (!r.recovered) {
      if (first_fail < 0 || r.config.load < first_fail) first_fail = r.config.load;
    } else {
      worst = std::max(worst, r.recovery_seconds);
    }
  }
  std::string out = absl::StrFormat("%-14s %-22s %18s %26s\n", "trigger", "policy",
                                    "metastable_from", "worst_recovery_below_it");
  for (const auto& key : keys) {
    const auto& [first_fail, worst] = cells[key];
    absl::StrAppendFormat(&out, "%-14s %-22s %18s %26s\n", key.first, key.second,
                          first_fail < 0 ? std::string("-") : absl::StrFormat("%.2f C", first_fail),
                          absl::StrFormat("%.1f s", worst));
  }
  return out;
}

std::string ToJson(const std::vector<RunResult>& runs) {
  std::vector<std::string> items;
  for (const RunResult& r : runs) {
    std::vector<std::string> good, amp, refused;
    for (const Bin& b : r.bins) {
      good.push_back(absl::StrFormat("%.4f", Frac(b.succeeded, b.offered)));
      amp.push_back(absl::StrFormat("%.3f", Frac(b.attempts, b.offered)));
      refused.push_back(absl::StrFormat("%.3f", b.offered > 0 ? Frac(b.refused_locally, b.offered) : 0.0));
    }
    const Config& c = r.config;
    items.push_back(absl::StrFormat(
        "{\"trigger\": \"%s\", \"policy\": \"%s\", \"load\": %.3f, \"clients\": %d, "
        "\"servers\": %d, \"workers\": %d, \"service_time_ms\": %.3f, \"seed\": %d, "
        "\"capacity_per_second\": %.1f, \"bin_seconds\": %.3f, \"trigger_start_s\": %.3f, "
        "\"trigger_end_s\": %.3f, \"baseline\": %.5f, \"recovered\": %s, "
        "\"recovery_seconds\": %.3f, \"trigger_amplification\": %.4f, \"window_amplification\": %.4f, "
        "\"peak_amplification\": %.4f, \"amplification\": %.4f, \"window_goodput\": %.5f, "
        "\"final_goodput\": %.5f, \"events\": %d, \"wall_seconds\": %.3f,\n"
        "  \"goodput\": [%s],\n  \"attempts_per_call\": [%s],\n"
        "  \"refused_locally_per_call\": [%s]}",
        TriggerName(c.trigger.kind), r.policy, c.load, c.clients, c.servers, c.workers,
        absl::ToDoubleMilliseconds(c.service_time), c.seed, Capacity(c),
        absl::ToDoubleSeconds(c.bin), absl::ToDoubleSeconds(c.warmup),
        absl::ToDoubleSeconds(c.warmup + c.trigger.length), r.baseline,
        r.recovered ? "true" : "false", r.recovery_seconds, r.trigger_amplification,
        r.window_amplification,
        r.peak_amplification, r.amplification, r.window_goodput, r.final_goodput, r.events,
        r.wall_seconds, absl::StrJoin(good, ","), absl::StrJoin(amp, ","),
        absl::StrJoin(refused, ",")));
  }
  return absl::StrCat("{\"runs\": [\n", absl::StrJoin(items, ",\n"), "\n]}\n");
}

std::string SeriesCsv(const std::vector<const RunResult*>& runs) {
  if (runs.empty()) return "";
  std::string out = "t";
  for (const RunResult* r : runs) absl::StrAppend(&out, ",", r->policy);
  out += "\n";
  const double bin_s = absl::ToDoubleSeconds(runs[0]->config.bin);
  for (size_t i = 0; i < runs[0]->bins.size(); ++i) {
    absl::StrAppendFormat(&out, "%.2f", (static_cast<double>(i) + 0.5) * bin_s);
    for (const RunResult* r : runs) {
      const Bin& b = i < r->bins.size() ? r->bins[i] : Bin();
      absl::StrAppendFormat(&out, ",%.4f", Frac(b.succeeded, b.offered));
    }
    out += "\n";
  }
  return out;
}

}  // namespace fleet
