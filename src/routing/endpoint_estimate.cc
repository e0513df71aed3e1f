#include "src/routing/endpoint_estimate.h"

#include <algorithm>
#include <cmath>

namespace resilience {

namespace {

// The weight a peak latency sample keeps (EndpointEstimate::Record()).
constexpr double kPeakWeight = 8;

double Seconds(int64_t nanos) { return static_cast<double>(nanos) * 1e-9; }

// The mean of the others' values, given the total, the count and whether
// (and with what) the endpoint itself is in them; `fallback` when no other.
double MeanOfOthers(double total, int count, bool own_counted, double own, double fallback) {
  if (own_counted) {
    total -= own;
    --count;
  }
  return count > 0 ? total / count : fallback;
}

// `own` moved toward `toward` once it went unrefreshed for longer than
// `tau`, linearly, reaching it one more `tau` later. Reaching it, not only
// nearing it: an endpoint at the others' mean wins against every one above
// the mean, even when no call is in flight anywhere.
double Aged(double own, double toward, double idle_seconds, double tau_seconds) {
  if (idle_seconds <= tau_seconds) return own;
  const double beta = std::min(1.0, (idle_seconds - tau_seconds) / tau_seconds);
  return own + (toward - own) * beta;
}

// The weight of a sample taken `dt_ns` ago, for the time constant `tau`.
// Samples usually end microseconds apart: there four terms of the series
// are exact to 1e-9 and a tenth of exp()'s cost.
double Decay(int64_t dt_ns, double tau_seconds) {
  const double x = Seconds(std::max<int64_t>(0, dt_ns)) / tau_seconds;
  if (x < 0.01) return 1 - x * (1 - x * (0.5 - x / 6));
  return std::exp(-x);
}

}  // namespace

void EndpointEstimate::AddTo(Totals& totals) const {
  if (HasLatency()) {
    totals.latency += OwnLatency();
    ++totals.latencies;
  }
  if (HasErrors()) {
    totals.error += OwnErrorShare();
    ++totals.errors;
  }
  if (load.has_value()) {
    totals.load += *load;
    ++totals.loads;
  }
}

void EndpointEstimate::SettleAgeing(int64_t now, const Tuning& t, const Totals& totals) {
  const Estimates e = Now(now, t, &totals);
  if (HasLatency()) latency_sum = e.latency * latency_weight;
  if (HasErrors()) failures = e.error_share * attempts;
}

EndpointEstimate::Estimates EndpointEstimate::Now(int64_t now, const Tuning& t,
                                                  const Totals* totals) const {
  Estimates e;
  const double latency_tau = t.latency_decay_s;
  if (!HasLatency()) {
    e.latency = MeanOfOthers(totals->latency, totals->latencies, false, 0, t.initial_latency_s);
  } else {
    e.latency = OwnLatency();
    const double idle = Seconds(now - latency_at);
    if (idle > latency_tau) {
      const double toward =
          MeanOfOthers(totals->latency, totals->latencies, true, e.latency, e.latency);
      e.latency = Aged(e.latency, toward, idle, latency_tau);
    }
  }
  if (HasErrors()) {
    e.error_share = OwnErrorShare();
    const double idle = Seconds(now - errors_at);
    const double tau = t.error_decay_s;
    if (idle > tau) {
      const double toward = MeanOfOthers(totals->error, totals->errors, true, e.error_share, 0);
      e.error_share = Aged(e.error_share, toward, idle, tau);
    }
  }
  if (load.has_value()) {
    e.load = *load;
    const double idle = Seconds(now - load_at);
    if (idle > latency_tau) {
      const double toward = MeanOfOthers(totals->load, totals->loads, true, e.load, 0);
      e.load = Aged(e.load, toward, idle, latency_tau);
    }
    // A report is as old as the last answer; calls sent since weigh on
    // the server already. Each call beyond those the report counted adds
    // the report's load per call of ours, the most a call can add (all
    // of it when we are the server's only client): without it, picks
    // between two answers all go to a replica whose report looked good.
    const int added = in_flight - (load_calls - 1);
    if (added > 0) e.load += added * *load / load_calls;
  }
  if (ramp_from != kFullWeight && t.slow_start_ns > 0) {
    const double ramp = static_cast<double>(now - ramp_from) / t.slow_start_ns;
    e.weight = 0.1 + 0.9 * std::clamp(ramp, 0.0, 1.0);
  }
  return e;
}

void EndpointEstimate::Record(int64_t now, absl::Duration latency, bool failed, const Tuning& t) {
  double x = Seconds(std::max<int64_t>(0, absl::ToInt64Nanoseconds(latency)));
  if (failed) x = std::max(x, t.failure_latency_s);
  // Latency: a sample above the estimate is taken at once, with the
  // weight of at most kPeakWeight samples: the next lower ones bring it
  // down within a few calls. Keeping the whole weight (thousands of
  // samples a second) kept a fast replica that stalled once looking slow
  // for seconds, and on a busy host every replica stalls now and then:
  // a 10x slow replica then looked no worse and kept 1.6 % of the calls.
  if (HasLatency()) {
    const double d = Decay(now - latency_at, t.latency_decay_s);
    latency_sum *= d;
    latency_weight *= d;
  }
  if (!HasLatency() || x > OwnLatency()) {
    latency_weight = std::min(latency_weight, kPeakWeight - 1) + 1;
    latency_sum = x * latency_weight;
  } else {
    latency_sum += x;
    latency_weight += 1;
  }
  latency_at = now;
  // Errors.
  if (HasErrors()) {
    const double d = Decay(now - errors_at, t.error_decay_s);
    failures *= d;
    attempts *= d;
  }
  attempts += 1;
  if (failed) failures += 1;
  errors_at = now;
}

}  // namespace resilience
