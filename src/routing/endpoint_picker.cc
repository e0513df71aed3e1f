#include "src/routing/endpoint_picker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace resilience {

namespace {

// The least latency estimate a cost uses, in seconds: zero-latency samples
// (a simulated server, a clock that did not move) must not make the calls
// in flight count for nothing.
constexpr double kLeastLatency = 1e-6;
// The lowest 1 - error share and 1 - load the factors divide by: an
// endpoint failing every attempt costs 2500 times a healthy one's
// (1 / 0.02^2), one reporting full load 20 times.
constexpr double kLeastSuccessShare = 0.02;
constexpr double kLeastHeadroom = 0.05;
// A decayed weight below this is no sample left.
constexpr double kNoWeight = 1e-12;
// The weight a peak latency sample keeps (EndpointState::Record()).
constexpr double kPeakWeight = 8;

// Times are nanoseconds since the Unix epoch on the picker's clock.
int64_t Nanos(absl::Time t) { return absl::ToUnixNanos(t); }
double Seconds(int64_t nanos) { return static_cast<double>(nanos) * 1e-9; }
constexpr int64_t kFullWeight = std::numeric_limits<int64_t>::min();

// Every current endpoint's raw estimates, summed: an estimate with no sample
// yet or not refreshed for a while takes (or moves toward) the mean of the
// others'.
struct Totals {
  double latency = 0;
  int latencies = 0;
  double error = 0;
  int errors = 0;
  double load = 0;
  int loads = 0;
};

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

struct EndpointPicker::EndpointState {
  // What a cost is made of, now.
  struct Estimates {
    double latency = 0;  // seconds
    double error_share = 0;
    double load = 0;
    double weight = 1;
  };

  absl::Time joined;
  // Start of the slow start (kFullWeight: none).
  int64_t ramp_from = kFullWeight;
  // False once SetEndpoints() left it out (a handle only).
  bool in_set = true;
  int in_flight = 0;
  int64_t picks = 0;
  int64_t retries_here = 0;
  Out out = Out::kNo;
  // Peak EWMA of the latency: the sum of the samples (seconds) and of their
  // weights exp(-age / latency_decay), as of latency_at. A weighted mean
  // rather than "estimate += alpha * (x - estimate)", so that samples ending
  // at the same instant each count. No weight: no sample.
  double latency_sum = 0;
  double latency_weight = 0;
  int64_t latency_at = 0;
  // The error share: failures over attempts, each weighted
  // exp(-age / error_decay).
  double failures = 0;
  double attempts = 0;
  int64_t errors_at = 0;
  // The last reported utilization, and our calls in flight there when it
  // was written (the reporting one included).
  std::optional<double> load;
  int load_calls = 1;
  int64_t load_at = 0;

  bool HasLatency() const { return latency_weight > kNoWeight; }
  bool HasErrors() const { return attempts > kNoWeight; }
  double OwnLatency() const { return latency_sum / latency_weight; }
  double OwnErrorShare() const { return failures / attempts; }

  void Reset() {
    latency_sum = latency_weight = failures = attempts = 0;
    load.reset();
  }

  void AddTo(Totals& totals) const {
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

  // Whether the latency or error estimate is ageing (Record() then starts
  // from the aged values, as Pick() saw them).
  bool Ageing(int64_t now, const Tuning& t) const {
    return (HasLatency() && now - latency_at > t.latency_decay_ns) ||
           (HasErrors() && now - errors_at > t.error_decay_ns);
  }

  // Whether Now() needs the others' estimates.
  bool NeedsOthers(int64_t now, const Tuning& t) const {
    return !HasLatency() || Ageing(now, t) ||
           (load.has_value() && now - load_at > t.latency_decay_ns);
  }

  // The aged latency and error estimates made the raw ones.
  void SettleAgeing(int64_t now, const Tuning& t, const Totals& totals) {
    const Estimates e = Now(now, t, &totals);
    if (HasLatency()) latency_sum = e.latency * latency_weight;
    if (HasErrors()) failures = e.error_share * attempts;
  }

  // `totals` may be null when !NeedsOthers().
  Estimates Now(int64_t now, const Tuning& t, const Totals* totals) const {
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

  double Cost(const Estimates& e) const {
    const double success = std::max(kLeastSuccessShare, 1 - e.error_share);
    const double headroom = std::max(kLeastHeadroom, 1 - e.load);
    return (in_flight + 1) * std::max(kLeastLatency, e.latency) / (success * success) /
           headroom / e.weight;
  }

  void Record(int64_t now, absl::Duration latency, bool failed, const Tuning& t) {
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
};

EndpointPicker::Endpoint::Endpoint(std::string name)
    : name_(std::move(name)), state_(std::make_unique<EndpointState>()) {}

EndpointPicker::Endpoint::~Endpoint() = default;

EndpointPicker::EndpointState& EndpointPicker::StateOf(const Endpoint& endpoint) const {
  return *endpoint.state_;
}

absl::Status EndpointPicker::Validate(const Options& options) {
  const auto in_range = [](absl::string_view field, absl::Duration d, absl::Duration low,
                           absl::Duration high, absl::string_view range) -> absl::Status {
    if (d >= low && d <= high) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be in ", range, ", got ", absl::FormatDuration(d)));
  };
  const absl::Duration hour = absl::Hours(1);
  const absl::Duration ms = absl::Milliseconds(1);
  for (const absl::Status& status : {
           in_range("slow_start", options.slow_start, absl::ZeroDuration(), absl::Minutes(10),
                    "[0, 10m]"),
           in_range("latency_decay", options.latency_decay, ms, hour, "[1ms, 1h]"),
           in_range("error_decay", options.error_decay, ms, hour, "[1ms, 1h]"),
           in_range("failure_latency", options.failure_latency, absl::ZeroDuration(), hour,
                    "[0, 1h]"),
       }) {
    if (!status.ok()) return status;
  }
  if (options.initial_latency <= absl::ZeroDuration() || options.initial_latency > hour) {
    return absl::InvalidArgumentError(absl::StrCat("initial_latency: must be in (0, 1h], got ",
                                                   absl::FormatDuration(options.initial_latency)));
  }
  return absl::OkStatus();
}

EndpointPicker::Tuning::Tuning(const Options& options)
    : slow_start_ns(absl::ToInt64Nanoseconds(options.slow_start)),
      latency_decay_ns(absl::ToInt64Nanoseconds(options.latency_decay)),
      error_decay_ns(absl::ToInt64Nanoseconds(options.error_decay)),
      latency_decay_s(absl::ToDoubleSeconds(options.latency_decay)),
      error_decay_s(absl::ToDoubleSeconds(options.error_decay)),
      failure_latency_s(absl::ToDoubleSeconds(options.failure_latency)),
      initial_latency_s(absl::ToDoubleSeconds(options.initial_latency)) {}

EndpointPicker::EndpointPicker(Options options, Clock& clock)
    : options_(std::move(options)), tuning_(options_), clock_(clock), random_(options_.seed) {}

EndpointPicker::~EndpointPicker() = default;

void EndpointPicker::SetEndpoints(const std::vector<std::string>& names) {
  MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  absl::flat_hash_map<absl::string_view, std::shared_ptr<Endpoint>> current;
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) {
    current.emplace(endpoint->name(), endpoint);
  }
  std::vector<std::shared_ptr<Endpoint>> next;
  next.reserve(names.size());
  absl::flat_hash_set<absl::string_view> taken;
  for (const std::string& name : names) {
    if (!taken.insert(name).second) continue;
    auto it = current.find(name);
    if (it != current.end()) {
      next.push_back(it->second);
      continue;
    }
    auto endpoint = std::make_shared<Endpoint>(name);
    StateOf(*endpoint).joined = now;
    if (!first_set_) StateOf(*endpoint).ramp_from = Nanos(now);
    next.push_back(std::move(endpoint));
  }
  if (!next.empty()) first_set_ = false;
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) StateOf(*endpoint).in_set = false;
  for (const std::shared_ptr<Endpoint>& endpoint : next) StateOf(*endpoint).in_set = true;
  endpoints_ = std::move(next);
}

std::shared_ptr<EndpointPicker::Endpoint> EndpointPicker::Pick(
    absl::FunctionRef<bool(const Endpoint&)> usable, absl::Span<const Endpoint* const> tried,
    bool retry) {
  // Indices into endpoints_: the untried usable ones, and the tried ones
  // (asked whether usable only if no untried one is).
  absl::InlinedVector<uint32_t, 16> preferred;
  absl::InlinedVector<uint32_t, 8> tried_here;
  MutexLock lock(&mu_);
  for (uint32_t i = 0; i < endpoints_.size(); ++i) {
    const Endpoint* endpoint = endpoints_[i].get();
    if (std::find(tried.begin(), tried.end(), endpoint) != tried.end()) {
      tried_here.push_back(i);
    } else if (usable(*endpoint)) {
      preferred.push_back(i);
    }
  }
  if (preferred.empty()) {
    for (uint32_t i : tried_here) {
      if (usable(*endpoints_[i])) preferred.push_back(i);
    }
  }
  const size_t k = preferred.size();
  if (k == 0) return nullptr;
  uint32_t chosen = preferred[0];
  if (k > 1) {
    const size_t a = std::min(k - 1, static_cast<size_t>(random_.NextUniform() * k));
    size_t b = std::min(k - 2, static_cast<size_t>(random_.NextUniform() * (k - 1)));
    if (b >= a) ++b;
    const EndpointState& first = StateOf(*endpoints_[preferred[a]]);
    const EndpointState& second = StateOf(*endpoints_[preferred[b]]);
    const int64_t now = Nanos(clock_.Now());
    Totals totals;  // only read when NeedsOthers()
    if (first.NeedsOthers(now, tuning_) || second.NeedsOthers(now, tuning_)) {
      for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) StateOf(*endpoint).AddTo(totals);
    }
    const double cost1 = first.Cost(first.Now(now, tuning_, &totals));
    const double cost2 = second.Cost(second.Now(now, tuning_, &totals));
    chosen = preferred[cost2 < cost1 ? b : a];
  }
  EndpointState& state = StateOf(*endpoints_[chosen]);
  ++state.picks;
  if (retry) ++state.retries_here;
  return endpoints_[chosen];  // a copy of the set's pointer: no allocation
}

void EndpointPicker::Started(Endpoint& endpoint) {
  MutexLock lock(&mu_);
  ++StateOf(endpoint).in_flight;
}

void EndpointPicker::Ended(Endpoint& endpoint, absl::Duration latency, Result result,
                           std::optional<double> load) {
  MutexLock lock(&mu_);
  EndpointState& state = StateOf(endpoint);
  const int calls_there = std::max(1, state.in_flight);
  state.in_flight = std::max(0, state.in_flight - 1);
  if (result == Result::kNeutral) return;
  const int64_t now = Nanos(clock_.Now());
  if (state.in_set && state.Ageing(now, tuning_)) {
    Totals totals;
    for (const std::shared_ptr<Endpoint>& e : endpoints_) StateOf(*e).AddTo(totals);
    state.SettleAgeing(now, tuning_, totals);
  }
  state.Record(now, latency, result == Result::kFailure, tuning_);
  if (load.has_value() && !std::isnan(*load)) {
    state.load = std::clamp(*load, 0.0, 1.0);
    state.load_calls = calls_there;
    state.load_at = now;
  }
}

void EndpointPicker::Rejoin(const std::string& name) {
  MutexLock lock(&mu_);
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) {
    if (endpoint->name() != name) continue;
    StateOf(*endpoint).Reset();
    StateOf(*endpoint).ramp_from = Nanos(clock_.Now());
    return;
  }
}

void EndpointPicker::Exclude(const std::string& name, Out out) {
  MutexLock lock(&mu_);
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) {
    if (endpoint->name() == name) StateOf(*endpoint).out = out;
  }
}

std::vector<std::string> EndpointPicker::Names() {
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  names.reserve(endpoints_.size());
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) names.push_back(endpoint->name());
  return names;
}

std::vector<EndpointPicker::EndpointStats> EndpointPicker::Snapshot() {
  MutexLock lock(&mu_);
  const int64_t now = Nanos(clock_.Now());
  Totals totals;
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) StateOf(*endpoint).AddTo(totals);
  std::vector<EndpointStats> stats;
  stats.reserve(endpoints_.size());
  for (const std::shared_ptr<Endpoint>& endpoint : endpoints_) {
    const EndpointState& state = StateOf(*endpoint);
    const EndpointState::Estimates e = state.Now(now, tuning_, &totals);
    EndpointStats s;
    s.name = endpoint->name();
    s.picks = state.picks;
    s.retries_here = state.retries_here;
    s.in_flight = state.in_flight;
    s.latency = state.HasLatency() ? absl::Seconds(e.latency) : absl::ZeroDuration();
    s.error_share = e.error_share;
    s.load = state.load;
    s.weight = e.weight;
    s.cost = state.Cost(e);
    s.out = state.out;
    s.joined = state.joined;
    stats.push_back(std::move(s));
  }
  return stats;
}

}  // namespace resilience
