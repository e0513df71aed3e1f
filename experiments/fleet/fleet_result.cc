#include "experiments/fleet/fleet_result.h"

#include <algorithm>
#include <cmath>

namespace fleet {
namespace {

// Width of the sliding window recovery is judged on.
constexpr absl::Duration kWindow = absl::Seconds(2);

double Fraction(int64_t num, int64_t den) { return den > 0 ? static_cast<double>(num) / den : 1.0; }

// Bins [from, to) summed: succeeded / offered and attempts / offered.
struct Span {
  int64_t offered = 0;
  int64_t succeeded = 0;
  int64_t attempts = 0;
};

Span Sum(const std::vector<Bin>& bins, size_t from, size_t to) {
  Span s;
  for (size_t i = from; i < std::min(to, bins.size()); ++i) {
    s.offered += bins[i].offered;
    s.succeeded += bins[i].succeeded;
    s.attempts += bins[i].attempts;
  }
  return s;
}

}  // namespace

void Summarize(RunResult& r) {
  const Config& c = r.config;
  const double bin_s = absl::ToDoubleSeconds(c.bin);
  const auto bin_at = [&](absl::Duration d) {
    return static_cast<size_t>(std::llround(absl::ToDoubleSeconds(d) / bin_s));
  };
  const size_t n = r.bins.size();
  const size_t start = bin_at(c.warmup);
  const size_t end = bin_at(c.warmup + c.trigger.length);
  // Calls that arrived within a call timeout (2 s) of the trigger may end in
  // it: the baseline stops 2.5 s before.
  const Span base = Sum(r.bins, bin_at(absl::Seconds(2)), bin_at(c.warmup - absl::Seconds(2.5)));
  r.baseline = Fraction(base.succeeded, base.offered);
  const Span all = Sum(r.bins, 0, n);
  r.amplification = Fraction(all.attempts, all.offered);
  const Span window = Sum(r.bins, start, end + bin_at(absl::Seconds(10)));
  r.window_amplification = Fraction(window.attempts, window.offered);
  r.window_goodput = Fraction(window.succeeded, window.offered);
  const Span during = Sum(r.bins, start, end);
  r.trigger_amplification = Fraction(during.attempts, during.offered);
  const Span last = Sum(r.bins, n > bin_at(absl::Seconds(10)) ? n - bin_at(absl::Seconds(10)) : 0, n);
  r.final_goodput = Fraction(last.succeeded, last.offered);
  r.peak_amplification = 0;
  for (const Bin& b : r.bins) {
    if (b.offered > 0) r.peak_amplification = std::max(r.peak_amplification, Fraction(b.attempts, b.offered));
  }
  // The last bin may hold calls cut by the end of the run: it is left out.
  // Recovery is judged on a sliding window of kWindow (one bad bin, e.g. an
  // adaptive limit's probe, is noise, not a failure to recover).
  const size_t last_full = n > 0 ? n - 1 : 0;
  const size_t w = std::max<size_t>(1, bin_at(kWindow));
  const double bar = 0.95 * r.baseline;
  const auto good_from = [&](size_t b) {
    const Span s = Sum(r.bins, b, std::min(b + w, last_full));
    return Fraction(s.succeeded, s.offered) >= bar;
  };
  // The earliest bin from which every window to the end of the run is good.
  size_t first_good = last_full > w ? last_full - w + 1 : 0;
  r.recovered = first_good > end && good_from(first_good - 1);
  if (r.recovered) {
    first_good = first_good - 1;
    while (first_good > end && good_from(first_good - 1)) --first_good;
  }
  r.recovery_seconds = r.recovered ? (static_cast<double>(first_good) - static_cast<double>(end)) * bin_s : -1;
}

}  // namespace fleet
