#include "src/routing/endpoint_picker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace resilience {

namespace {

// Times are nanoseconds since the Unix epoch on the picker's clock.
int64_t Nanos(absl::Time t) { return absl::ToUnixNanos(t); }

using Totals = EndpointEstimate::Totals;

EndpointEstimate::Tuning TuningOf(const EndpointPicker::Options& options) {
  return EndpointEstimate::Tuning{
      absl::ToInt64Nanoseconds(options.slow_start),
      absl::ToInt64Nanoseconds(options.latency_decay),
      absl::ToInt64Nanoseconds(options.error_decay),
      absl::ToDoubleSeconds(options.latency_decay),
      absl::ToDoubleSeconds(options.error_decay),
      absl::ToDoubleSeconds(options.failure_latency),
      absl::ToDoubleSeconds(options.initial_latency),
  };
}

}  // namespace

// An endpoint's estimates (src/routing/endpoint_estimate.h) and what the
// picker counts and shows of it.
struct EndpointPicker::EndpointState : EndpointEstimate {
  absl::Time joined;
  // False once SetEndpoints() left it out (a handle only).
  bool in_set = true;
  int64_t picks = 0;
  int64_t retries_here = 0;
  Out out = Out::kNo;
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

EndpointPicker::EndpointPicker(Options options, Clock& clock)
    : options_(std::move(options)),
      tuning_(TuningOf(options_)),
      clock_(clock),
      random_(options_.seed) {}

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
    const EndpointEstimate::Estimates e = state.Now(now, tuning_, &totals);
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
