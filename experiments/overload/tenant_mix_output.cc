// TenantsToJson(), TenantsToTable(), TenantsToSvg() and their repeated
// forms (TenantRepeatsTo*) of tenant_mix.h.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/overload/tenant_mix.h"

namespace overload {
namespace {

double Seconds(const TenantMixResult& r) { return absl::ToDoubleSeconds(r.config.duration); }

double FairShare(const TenantConfig& c) {
  return c.workers / absl::ToDoubleSeconds(c.service_time) / c.tenants;
}

}  // namespace

std::string TenantsToJson(const TenantMixResult& r) {
  const TenantConfig& c = r.config;
  std::string out = absl::StrFormat(
      R"({"config": {"workers": %d, "service_time_ms": %.1f, "deadline_ms": %.1f, )"
      R"("duration_s": %.1f, "tenants": %d, "quiet_load": %.2f, "noisy_load": %.2f, )"
      R"("fair_share_per_second": %.1f, "seed": %d}, "runs": [)",
      c.workers, absl::ToDoubleMilliseconds(c.service_time), absl::ToDoubleMilliseconds(c.deadline),
      Seconds(r), c.tenants, c.quiet_load, c.noisy_load, FairShare(c), c.seed);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const TenantRun& run = r.runs[i];
    std::string tenants;
    for (size_t t = 0; t < run.tenants.size(); ++t) {
      const TenantResult& x = run.tenants[t];
      absl::StrAppend(&tenants, t == 0 ? "" : ", ",
                      absl::StrFormat(R"({"offered": %d, "rejected": %d, "ok_in_deadline": %d, )"
                                      R"("late": %d})",
                                      x.offered, x.rejected, x.ok_in_deadline, x.late));
    }
    absl::StrAppend(&out, i == 0 ? "\n  " : ",\n  ",
                    absl::StrFormat(R"({"policy": "%s", "noisy_tenant": %s, )"
                                    R"("quiet_goodput_per_second": %.1f, "tenants": [%s]})",
                                    run.policy, run.noisy ? "true" : "false",
                                    run.quiet_goodput_per_second, tenants));
  }
  absl::StrAppend(&out, "\n], \"quiet_loss\": {");
  for (size_t p = 0; p < r.quiet_loss.size(); ++p) {
    absl::StrAppend(&out, p == 0 ? "" : ", ",
                    absl::StrFormat(R"("%s": %.4f)", r.runs[2 * p].policy, r.quiet_loss[p]));
  }
  absl::StrAppend(&out, "}, \"notes\": [");
  for (size_t i = 0; i < r.notes.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", "\"", r.notes[i], "\"");
  }
  absl::StrAppend(&out, "]}\n");
  return out;
}

std::string TenantsToTable(const TenantMixResult& r) {
  std::string out = absl::StrFormat("%-24s %-6s %14s %14s %14s %13s %13s\n", "policy", "noisy",
                                    "quiet good/s", "quiet refused", "quiet late", "noisy good/s",
                                    "noisy refused");
  for (const TenantRun& run : r.runs) {
    int64_t offered = 0, rejected = 0, late = 0;
    for (size_t t = 1; t < run.tenants.size(); ++t) {
      offered += run.tenants[t].offered;
      rejected += run.tenants[t].rejected;
      late += run.tenants[t].late;
    }
    const TenantResult& noisy = run.tenants[0];
    const auto pct = [](int64_t part, int64_t whole) {
      return whole == 0 ? 0.0 : 100.0 * part / whole;
    };
    absl::StrAppend(
        &out, absl::StrFormat("%-24s %-6s %14.1f %13.2f%% %13.2f%% %13.1f %12.2f%%\n", run.policy,
                              run.noisy ? "yes" : "no", run.quiet_goodput_per_second,
                              pct(rejected, offered), pct(late, offered),
                              noisy.ok_in_deadline / Seconds(r),
                              pct(noisy.rejected, noisy.offered)));
  }
  for (size_t p = 0; p < r.quiet_loss.size(); ++p) {
    absl::StrAppend(&out, absl::StrFormat("%s: the quiet tenants lose %.2f%% of their goodput to "
                                          "the noisy one\n",
                                          r.runs[2 * p].policy, 100 * r.quiet_loss[p]));
  }
  for (const std::string& note : r.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

namespace {

// One group of bars in the chart: a policy's quiet goodput without and with
// the noisy tenant and the noisy tenant's own, per second, and two lines
// of label under it.
struct BarGroup {
  double quiet_without = 0;
  double quiet_with = 0;
  double noisy = 0;
  std::string label;
  std::string sublabel;
};

BarGroup GroupOf(const TenantMixResult& r, size_t policy, const std::string& sublabel_prefix) {
  const TenantRun& with = r.runs[2 * policy];
  return BarGroup{r.runs[2 * policy + 1].quiet_goodput_per_second, with.quiet_goodput_per_second,
                  with.tenants[0].ok_in_deadline / Seconds(r), with.policy,
                  absl::StrFormat("%squiet lose %.1f%%", sublabel_prefix,
                                  100 * r.quiet_loss[policy])};
}

std::string DrawGroups(const TenantConfig& config, const std::vector<BarGroup>& groups,
                       const std::string& title) {
  constexpr int kLeft = 60, kTop = 50, kHeight = 300, kBar = 34, kGap = 40;
  const int width = kLeft + static_cast<int>(groups.size()) * (3 * kBar + kGap) + 230;
  const int height = kTop + kHeight + 70;
  const double share = FairShare(config);
  const double capacity = share * config.tenants;
  const auto y = [&](double per_second) {
    return kTop + kHeight * (1.0 - std::min(per_second / capacity, 1.0));
  };
  std::string svg = SvgOpening(width, height, kLeft, title);
  for (int pct = 0; pct <= 100; pct += 20) {
    const double v = capacity * pct / 100.0;
    absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>)"
                                          R"(<text x="%d" y="%.1f" text-anchor="end">%.0f/s</text>)"
                                          "\n",
                                          kLeft, width - 230, y(v), y(v), kLeft - 6, y(v) + 4, v));
  }
  absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4 3"/>)"
                                        R"(<text x="%d" y="%.1f" fill="#c00">one tenant's fair share</text>)"
                                        "\n",
                                        kLeft, width - 230, y(share), y(share), width - 225,
                                        y(share) + 4));
  int x = kLeft + kGap / 2;
  for (const BarGroup& g : groups) {
    for (const auto& [value, color] : {std::pair{g.quiet_without, "#2ca02c"},
                                       std::pair{g.quiet_with, "#1f77b4"},
                                       std::pair{g.noisy, "#d62728"}}) {
      absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>)"
                                            R"(<text x="%d" y="%.1f" text-anchor="middle" font-size="10">%.0f</text>)"
                                            "\n",
                                            x, y(value), kBar - 2, kTop + kHeight - y(value), color,
                                            x + kBar / 2, y(value) - 3, value));
      x += kBar;
    }
    absl::StrAppend(&svg, absl::StrFormat(R"(<text x="%d" y="%d" text-anchor="middle">%s</text>)"
                                          R"(<text x="%d" y="%d" text-anchor="middle">%s</text>)"
                                          "\n",
                                          x - 3 * kBar / 2, kTop + kHeight + 18, g.label,
                                          x - 3 * kBar / 2, kTop + kHeight + 34, g.sublabel));
    x += kGap;
  }
  absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%d" width="12" height="12" fill="#2ca02c"/>)"
                                        R"(<text x="%d" y="%d">%d quiet tenants, noisy one absent</text>)"
                                        R"(<rect x="%d" y="%d" width="12" height="12" fill="#1f77b4"/>)"
                                        R"(<text x="%d" y="%d">%d quiet tenants, noisy one at %gx</text>)"
                                        R"(<rect x="%d" y="%d" width="12" height="12" fill="#d62728"/>)"
                                        R"(<text x="%d" y="%d">the noisy tenant</text>)"
                                        "\n</svg>\n",
                                        width - 225, kTop + 30, width - 208, kTop + 41,
                                        config.tenants - 1, width - 225, kTop + 50, width - 208,
                                        kTop + 61, config.tenants - 1, config.noisy_load,
                                        width - 225, kTop + 70, width - 208, kTop + 81));
  return svg;
}

}  // namespace

std::string TenantsToSvg(const TenantMixResult& r, const std::string& title) {
  std::vector<BarGroup> groups;
  for (size_t p = 0; p < r.quiet_loss.size(); ++p) groups.push_back(GroupOf(r, p, ""));
  return DrawGroups(r.config, groups, title);
}

std::string TenantRepeatsToJson(const std::vector<TenantMixResult>& repeats,
                                const TenantMixResult* simulated) {
  if (repeats.size() == 1 && simulated == nullptr) return TenantsToJson(repeats[0]);
  const auto strip = [](std::string json) {
    json.pop_back();  // its newline
    return json;
  };
  std::string out = "{\"repeats\": [\n";
  for (size_t i = 0; i < repeats.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",\n", strip(TenantsToJson(repeats[i])));
  }
  absl::StrAppend(&out, "\n]");
  if (simulated != nullptr) {
    absl::StrAppend(&out, ",\n\"simulated_same_scale\": ", strip(TenantsToJson(*simulated)));
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

std::string TenantRepeatsToTable(const std::vector<TenantMixResult>& repeats,
                                 const TenantMixResult* simulated) {
  if (repeats.size() == 1 && simulated == nullptr) return TenantsToTable(repeats[0]);
  std::string out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    absl::StrAppend(&out, absl::StrFormat("== run %d of %d ==\n", i + 1, repeats.size()),
                    TenantsToTable(repeats[i]), "\n");
  }
  absl::StrAppend(&out, absl::StrFormat("quiet goodput lost to the noisy tenant over %d runs:\n",
                                        repeats.size()));
  for (size_t p = 0; p < repeats[0].quiet_loss.size(); ++p) {
    double least = 1, most = -1;
    for (const TenantMixResult& r : repeats) {
      least = std::min(least, r.quiet_loss[p]);
      most = std::max(most, r.quiet_loss[p]);
    }
    absl::StrAppend(&out, absl::StrFormat("  %-24s %.2f%% to %.2f%%\n",
                                          repeats[0].runs[2 * p].policy, 100 * least, 100 * most));
  }
  if (simulated != nullptr) {
    absl::StrAppend(&out, "\n== simulated at the same scale (same arrivals) ==\n",
                    TenantsToTable(*simulated));
  }
  return out;
}

std::string TenantRepeatsToSvg(const std::vector<TenantMixResult>& repeats,
                               const std::string& title) {
  if (repeats.size() == 1) return TenantsToSvg(repeats[0], title);
  std::vector<BarGroup> groups;  // by policy, then repetition
  for (size_t p = 0; p < repeats[0].quiet_loss.size(); ++p) {
    for (size_t i = 0; i < repeats.size(); ++i) {
      groups.push_back(GroupOf(repeats[i], p, absl::StrCat("run ", i + 1, ": ")));
    }
  }
  return DrawGroups(repeats[0].config, groups, title);
}

}  // namespace overload
