// TenantsToJson(), TenantsToTable(), TenantsToSvg() of tenant_mix.h.

#include <algorithm>
#include <utility>

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

std::string TenantsToSvg(const TenantMixResult& r, const std::string& title) {
  constexpr int kLeft = 60, kTop = 50, kHeight = 300, kBar = 34, kGap = 40;
  const size_t groups = r.quiet_loss.size();
  const int width = kLeft + static_cast<int>(groups) * (3 * kBar + kGap) + 230;
  const int height = kTop + kHeight + 70;
  const double capacity = FairShare(r.config) * r.config.tenants;
  const auto y = [&](double per_second) {
    return kTop + kHeight * (1.0 - std::min(per_second / capacity, 1.0));
  };
  std::string svg = absl::StrFormat(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      R"(<text x="%d" y="24" font-size="14">%s</text>)"
      "\n",
      width, height, kLeft, title);
  for (int pct = 0; pct <= 100; pct += 20) {
    const double v = capacity * pct / 100.0;
    absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>)"
                                          R"(<text x="%d" y="%.1f" text-anchor="end">%.0f/s</text>)"
                                          "\n",
                                          kLeft, width - 230, y(v), y(v), kLeft - 6, y(v) + 4, v));
  }
  const double share = FairShare(r.config);
  absl::StrAppend(&svg, absl::StrFormat(R"(<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4 3"/>)"
                                        R"(<text x="%d" y="%.1f" fill="#c00">one tenant's fair share</text>)"
                                        "\n",
                                        kLeft, width - 230, y(share), y(share), width - 225,
                                        y(share) + 4));
  int x = kLeft + kGap / 2;
  for (size_t p = 0; p < groups; ++p) {
    const TenantRun& with = r.runs[2 * p];
    const TenantRun& without = r.runs[2 * p + 1];
    const double noisy = with.tenants[0].ok_in_deadline / Seconds(r);
    for (const auto& [value, color] : {std::pair{without.quiet_goodput_per_second, "#2ca02c"},
                                       std::pair{with.quiet_goodput_per_second, "#1f77b4"},
                                       std::pair{noisy, "#d62728"}}) {
      absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>)"
                                            R"(<text x="%d" y="%.1f" text-anchor="middle" font-size="10">%.0f</text>)"
                                            "\n",
                                            x, y(value), kBar - 2, kTop + kHeight - y(value), color,
                                            x + kBar / 2, y(value) - 3, value));
      x += kBar;
    }
    absl::StrAppend(&svg, absl::StrFormat(R"(<text x="%d" y="%d" text-anchor="middle">%s</text>)"
                                          R"(<text x="%d" y="%d" text-anchor="middle">quiet lose %.1f%%</text>)"
                                          "\n",
                                          x - 3 * kBar / 2, kTop + kHeight + 18, with.policy,
                                          x - 3 * kBar / 2, kTop + kHeight + 34,
                                          100 * r.quiet_loss[p]));
    x += kGap;
  }
  absl::StrAppend(&svg, absl::StrFormat(R"(<rect x="%d" y="%d" width="12" height="12" fill="#2ca02c"/>)"
                                        R"(<text x="%d" y="%d">9 quiet tenants, noisy one absent</text>)"
                                        R"(<rect x="%d" y="%d" width="12" height="12" fill="#1f77b4"/>)"
                                        R"(<text x="%d" y="%d">9 quiet tenants, noisy one at %gx</text>)"
                                        R"(<rect x="%d" y="%d" width="12" height="12" fill="#d62728"/>)"
                                        R"(<text x="%d" y="%d">the noisy tenant</text>)"
                                        "\n</svg>\n",
                                        width - 225, kTop + 30, width - 208, kTop + 41,
                                        width - 225, kTop + 50, width - 208, kTop + 61,
                                        r.config.noisy_load, width - 225, kTop + 70, width - 208,
                                        kTop + 81));
  return svg;
}

std::string TenantRepeatsToJson(const std::vector<TenantMixResult>& repeats) {
  if (repeats.size() == 1) return TenantsToJson(repeats[0]);
  std::string out = "{\"repeats\": [\n";
  for (size_t i = 0; i < repeats.size(); ++i) {
    std::string one = TenantsToJson(repeats[i]);
    one.pop_back();  // its newline
    absl::StrAppend(&out, i == 0 ? "" : ",\n", one);
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

std::string TenantRepeatsToTable(const std::vector<TenantMixResult>& repeats) {
  if (repeats.size() == 1) return TenantsToTable(repeats[0]);
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
    absl::StrAppend(&out, absl::StrFormat("  %-24s %.2f%% to %.2f%%\n", repeats[0].runs[2 * p].policy,
                                          100 * least, 100 * most));
  }
  return out;
}

std::string TenantRepeatsToSvg(const std::vector<TenantMixResult>& repeats,
                               const std::string& title) {
  if (repeats.size() == 1) return TenantsToSvg(repeats[0], title);
  // Every repetition's runs in one result, grouped by policy.
  TenantMixResult all;
  all.config = repeats[0].config;
  for (size_t p = 0; p < repeats[0].quiet_loss.size(); ++p) {
    for (size_t i = 0; i < repeats.size(); ++i) {
      for (size_t noisy : {2 * p, 2 * p + 1}) {
        TenantRun run = repeats[i].runs[noisy];
        absl::StrAppend(&run.policy, " (", i + 1, ")");
        all.runs.push_back(std::move(run));
      }
      all.quiet_loss.push_back(repeats[i].quiet_loss[p]);
    }
  }
  return TenantsToSvg(all, title);
}

}  // namespace overload
