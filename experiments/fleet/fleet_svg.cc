#include "experiments/fleet/fleet_svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fleet {
namespace {

constexpr const char* kColors[] = {"#7f7f7f", "#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd"};

const char* Color(size_t i) { return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))]; }

std::string Header(int width, int height) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n",
      width, height);
}

}  // namespace

std::string GoodputSvg(const std::vector<RunResult>& runs, const std::string& trigger, double load) {
  std::vector<const RunResult*> chosen;
  for (const RunResult& r : runs) {
    if (TriggerName(r.config.trigger.kind) == trigger && std::abs(r.config.load - load) < 1e-9) {
      chosen.push_back(&r);
    }
  }
  const int w = 1000, h = 420, left = 60, right = 310, top = 40, bottom = 50;
  const int pw = w - left - right, ph = h - top - bottom;
  std::string out = Header(w, h);
  if (chosen.empty()) return out + "<text x=\"20\" y=\"40\">no run at this load</text>\n</svg>\n";
  const Config& c = chosen[0]->config;
  const double total = absl::ToDoubleSeconds(RunLength(c));
  const auto x = [&](double s) { return left + pw * s / total; };
  const auto y = [&](double f) { return top + ph * (1.0 - f); };
  absl::StrAppendFormat(&out,
                        "<text x=\"%d\" y=\"22\" font-size=\"13\">Fleet simulator: %s at %.2f C "
                        "(%d clients x %d servers, C = %.0f calls/s): calls succeeded / offered"
                        "</text>\n",
                        left, trigger, load, c.clients, c.servers, Capacity(c));
  const double t0 = absl::ToDoubleSeconds(c.warmup);
  const double t1 = t0 + absl::ToDoubleSeconds(c.trigger.length);
  absl::StrAppendFormat(&out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f2dede\"/>\n",
                        x(t0), top, x(t1) - x(t0), ph);
  for (int i = 0; i <= 4; ++i) {
    const double f = i / 4.0;
    absl::StrAppendFormat(&out,
                          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
                          left, y(f), left + pw, y(f), left - 6, y(f) + 4, f);
  }
  for (double s = 0; s <= total + 1e-9; s += 10) {
    absl::StrAppendFormat(&out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", x(s),
                          top + ph + 18, s);
  }
  absl::StrAppendFormat(&out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">simulated time (s); "
                        "trigger shaded</text>\n", left + pw / 2, h - 10);
  out += absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
                         left, top, pw, ph);
  const double bin_s = absl::ToDoubleSeconds(c.bin);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const RunResult& r = *chosen[i];
    std::string points;
    // The last bin holds calls cut by the end of the run: left out.
    for (size_t b = 0; b + 1 < r.bins.size(); ++b) {
      const Bin& bin = r.bins[b];
      const double f = bin.offered > 0 ? static_cast<double>(bin.succeeded) / bin.offered : 1.0;
      absl::StrAppendFormat(&points, "%.1f,%.1f ", x((b + 0.5) * bin_s), y(f));
    }
    absl::StrAppendFormat(&out,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"%s\"/>\n",
                          Color(i), points);
    const std::string rec = r.recovered ? absl::StrFormat("%.1f s", r.recovery_seconds) : "never";
    absl::StrAppendFormat(&out,
                          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
                          "<text x=\"%d\" y=\"%d\">%s (%s, x%.2f)</text>\n",
                          left + pw + 10, top + 10 + 20 * static_cast<int>(i), left + pw + 28,
                          top + 10 + 20 * static_cast<int>(i), Color(i), left + pw + 32,
                          top + 14 + 20 * static_cast<int>(i), r.policy, rec, r.window_amplification);
  }
  absl::StrAppendFormat(&out, "<text x=\"%d\" y=\"%d\" font-size=\"10\">(recovery, attempts/call "
                        "in the window)</text>\n", left + pw + 10, top + 20 + 20 * static_cast<int>(chosen.size()));
  return out + "</svg>\n";
}

std::string BoundarySvg(const std::vector<RunResult>& runs) {
  std::vector<std::string> triggers, policies;
  std::vector<double> loads;
  for (const RunResult& r : runs) {
    const std::string t = TriggerName(r.config.trigger.kind);
    if (std::find(triggers.begin(), triggers.end(), t) == triggers.end()) triggers.push_back(t);
    if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) policies.push_back(r.policy);
    if (std::find(loads.begin(), loads.end(), r.config.load) == loads.end()) loads.push_back(r.config.load);
  }
  std::sort(loads.begin(), loads.end());
  const int cell_w = 56, cell_h = 22, label_w = 170, panel_gap = 40;
  const int panel_h = cell_h * (static_cast<int>(policies.size()) + 1) + panel_gap;
  const int w = label_w + cell_w * static_cast<int>(loads.size()) + 20;
  const int h = 40 + panel_h * static_cast<int>(triggers.size());
  std::string out = Header(w, h);
  out += "<text x=\"10\" y=\"22\" font-size=\"12\">Recovers after the trigger? (recovery time, or "
         "never) per offered load (x C)</text>\n";
  for (size_t ti = 0; ti < triggers.size(); ++ti) {
    const int y0 = 40 + panel_h * static_cast<int>(ti);
    absl::StrAppendFormat(&out, "<text x=\"10\" y=\"%d\" font-weight=\"bold\">%s</text>\n", y0 + 15,
                          triggers[ti]);
    for (size_t li = 0; li < loads.size(); ++li) {
      absl::StrAppendFormat(&out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.2f</text>\n",
                            label_w + cell_w * static_cast<int>(li) + cell_w / 2, y0 + 15, loads[li]);
    }
    for (size_t pi = 0; pi < policies.size(); ++pi) {
      const int y = y0 + cell_h * (static_cast<int>(pi) + 1);
      absl::StrAppendFormat(&out, "<text x=\"10\" y=\"%d\">%s</text>\n", y + 15, policies[pi]);
      for (const RunResult& r : runs) {
        if (TriggerName(r.config.trigger.kind) != triggers[ti] || r.policy != policies[pi]) continue;
        const size_t li = static_cast<size_t>(std::find(loads.begin(), loads.end(), r.config.load) - loads.begin());
        const int x = label_w + cell_w * static_cast<int>(li);
        const char* fill = !r.recovered ? "#e06666" : (r.recovery_seconds <= 5 ? "#93c47d" : "#ffd966");
        const std::string label = r.recovered ? absl::StrFormat("%.1fs", r.recovery_seconds) : "never";
        absl::StrAppendFormat(&out,
                              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                              "stroke=\"white\"/><text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                              "font-size=\"11\">%s</text>\n",
                              x, y, cell_w, cell_h, fill, x + cell_w / 2, y + 15, label);
      }
    }
  }
  return out + "</svg>\n";
}

}  // namespace fleet
