#include "src/breaker/endpoint_breakers.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace resilience {

namespace {
constexpr int kNotForced = 0;
constexpr int kForcedOpen = 1;
constexpr int kForcedClosed = 2;
}  // namespace

struct EndpointBreakers::Entry {
  explicit Entry(std::string name) : endpoint(std::move(name)) {}

  const std::string endpoint;
  std::atomic<int64_t> last_seen_ns{0};
  // The breaker's state, as its last transition left it (BreakerState).
  std::atomic<int> state{static_cast<int>(BreakerState::kClosed)};
  std::atomic<int64_t> outcomes{0};
  std::atomic<int64_t> refused{0};
  // Failures in a row (reset by a success), and the last success (written
  // at most once per millisecond): for FailingAlone().
  std::atomic<int64_t> failures_in_a_row{0};
  std::atomic<int64_t> last_success_ns{0};
  // An operator's force (Control()): kept from eviction, and for
  // ServiceFailing() open or closed whatever its state.
  std::atomic<int> forced{kNotForced};
  // When Gate() last let an attempt through while the breaker was not
  // closed.
  std::atomic<int64_t> last_probe_ns{0};
  // Check() found it failing since it last found it passing.
  std::atomic<bool> gated{false};
  // With Options::recovery_probe: the breaker's RecoveryProbe (destroyed
  // after the breaker, which it does not touch then).
  std::unique_ptr<RecoveryProbe> probe;
  // Last member: destroyed first, with the listener that points here.
  std::unique_ptr<Breaker> breaker;
};

absl::Status EndpointBreakers::Validate(const Options& options) {
  if (options.unreached_failures < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unreached_failures: must be >= 1, got ", options.unreached_failures));
  }
  if (options.alone_failures < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("alone_failures: must be >= 1, got ", options.alone_failures));
  }
  if (!(options.failing_share > 0 && options.failing_share <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("failing_share: must be in (0, 1], got ", options.failing_share));
  }
  if (options.max_endpoints < 1 || options.max_endpoints > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_endpoints: must be in [1, 1024], got ", options.max_endpoints));
  }
  if (options.listed_endpoints < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listed_endpoints: must be >= 0, got ", options.listed_endpoints));
  }
  if (options.listed_grace < absl::ZeroDuration() || options.listed_grace > absl::Minutes(1)) {
    return absl::InvalidArgumentError(absl::StrCat("listed_grace: must be in [0, 1m], got ",
                                                   absl::FormatDuration(options.listed_grace)));
  }
  if (options.recent < absl::Milliseconds(1) || options.recent > absl::Hours(24)) {
    return absl::InvalidArgumentError(absl::StrCat("recent: must be in [1ms, 24h], got ",
                                                   absl::FormatDuration(options.recent)));
  }
  return absl::OkStatus();
}

EndpointBreakers::EndpointBreakers(Options options, Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

EndpointBreakers::~EndpointBreakers() = default;

bool EndpointBreakers::Record(const std::string& endpoint, Outcome outcome,
                              absl::Duration latency, std::shared_ptr<RecoveryProbe>* due) {
  const absl::Time now = clock_.Now();
  const int64_t now_ns = absl::ToUnixNanos(now);
  if (endpoint.empty()) {
    if (outcome == Outcome::kFailure) unreached_in_a_row_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (first_outcome_ns_.load(std::memory_order_relaxed) == 0) {
    int64_t none = 0;
    first_outcome_ns_.compare_exchange_strong(none, now_ns, std::memory_order_relaxed);
  }
  std::shared_ptr<Entry> entry = Find(endpoint, now);
  entry->last_seen_ns.store(now_ns, std::memory_order_relaxed);
  if (outcome == Outcome::kNeutral) return true;
  entry->outcomes.fetch_add(1, std::memory_order_relaxed);
  // A success ends a run of unreached failures (written only when there is
  // one, so that healthy calls do not share a written cache line).
  if (outcome == Outcome::kSuccess && unreached_in_a_row_.load(std::memory_order_relaxed) != 0) {
    unreached_in_a_row_.store(0, std::memory_order_relaxed);
  }
  if (outcome == Outcome::kFailure) {
    entry->failures_in_a_row.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Written only when they change, as above.
    if (entry->failures_in_a_row.load(std::memory_order_relaxed) != 0) {
      entry->failures_in_a_row.store(0, std::memory_order_relaxed);
    }
    if (now_ns - entry->last_success_ns.load(std::memory_order_relaxed) >= 1'000'000) {
      entry->last_success_ns.store(now_ns, std::memory_order_relaxed);
    }
  }
  Admission admission = entry->breaker->Allow();
  bool counted = true;
  if (!admission.admitted()) {
    entry->refused.fetch_add(1, std::memory_order_relaxed);
    // With one endpoint known there is nothing to route around: the
    // method's breaker counts it as it would without endpoints.
    counted = known_.load(std::memory_order_relaxed) < 2;
  } else {
    admission.Record(outcome, latency);
  }
  if (entry->probe != nullptr && due != nullptr) {
    if (outcome == Outcome::kFailure) entry->probe->OnCallFailed();
    // Aliasing: points to the probe, owns the entry (and so its breaker).
    if (entry->probe->StartIfDue()) *due = std::shared_ptr<RecoveryProbe>(entry, entry->probe.get());
  }
  return counted;
}

bool EndpointBreakers::ServiceFailing() {
  const absl::Time now = clock_.Now();
  // (b) nothing could be picked for a run of attempts.
  if (unreached_in_a_row_.load(std::memory_order_relaxed) >= options_.unreached_failures) {
    return true;
  }
  const int64_t since_ns = absl::ToUnixNanos(now - options_.recent);
  int recent = 0;
  int failing = 0;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, entry] : entries_) {
      if (entry->last_seen_ns.load(std::memory_order_relaxed) < since_ns) continue;
      ++recent;
      if (Failing(*entry)) ++failing;
    }
  }
  // (a) fewer than two endpoints seen recently: nothing to route around, the
  // method's breaker decides alone; (c) enough of them open.
  if (recent < 2) return true;
  return failing >= FailingBound(recent);
}

bool EndpointBreakers::Failing(const Entry& entry) {
  const int forced = entry.forced.load(std::memory_order_relaxed);
  return forced == kForcedOpen ||
         (forced == kNotForced &&
          entry.state.load(std::memory_order_acquire) != static_cast<int>(BreakerState::kClosed));
}

int EndpointBreakers::FailingBound(int recent) const {
  // (a): with fewer than two, any is enough.
  if (recent < 2) return 0;
  return static_cast<int>(std::ceil(options_.failing_share * recent - 1e-9));
}

bool EndpointBreakers::FailingAlone(const std::string& endpoint) {
  if (endpoint.empty() ||
      unreached_in_a_row_.load(std::memory_order_relaxed) >= options_.unreached_failures) {
    return false;
  }
  const absl::Time now = clock_.Now();
  const int64_t since_ns = absl::ToUnixNanos(now - options_.recent);
  const int64_t first_ns = first_outcome_ns_.load(std::memory_order_relaxed);
  const bool in_grace =
      first_ns != 0 && now - absl::FromUnixNanos(first_ns) < options_.listed_grace;
  MutexLock lock(&mu_);
  auto it = entries_.find(endpoint);
  if (it == entries_.end()) return false;
  const Entry& bad = *it->second;
  if (!Failing(bad) &&
      bad.failures_in_a_row.load(std::memory_order_relaxed) < options_.alone_failures) {
    return false;
  }
  if (bad.forced.load(std::memory_order_relaxed) == kForcedClosed) return false;
  // Another one serves, and the service is not failing by (c).
  bool serves = false;
  int recent = 0;
  int failing = 0;
  for (const auto& [name, other] : entries_) {
    if (other->last_seen_ns.load(std::memory_order_relaxed) < since_ns) continue;
    ++recent;
    if (Failing(*other)) {
      ++failing;
    } else if (other.get() != &bad &&
               other->failures_in_a_row.load(std::memory_order_relaxed) == 0 &&
               other->last_success_ns.load(std::memory_order_relaxed) >= since_ns) {
      serves = true;
    }
  }
  if (in_grace && recent < options_.listed_endpoints) {
    // The start: the listed endpoints not seen yet are connecting (gRPC
    // sends no pick there until they are), and count as serving.
    serves = true;
    recent = options_.listed_endpoints;
  }
  return serves && failing < FailingBound(recent);
}

EndpointBreakers::Gate EndpointBreakers::Check(const std::string& endpoint, bool probe,
                                               absl::Duration probe_every) {
  std::shared_ptr<Entry> entry;
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(endpoint);
    if (it == entries_.end()) return Gate::kPass;
    entry = it->second;
  }
  const int forced = entry->forced.load(std::memory_order_relaxed);
  if (forced == kForcedOpen) return Gate::kForcedOpen;
  if (forced == kForcedClosed || !Failing(*entry)) {
    if (entry->gated.load(std::memory_order_relaxed) &&
        entry->gated.exchange(false, std::memory_order_relaxed)) {
      return Gate::kRecovered;
    }
    return Gate::kPass;
  }
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  if (!entry->gated.exchange(true, std::memory_order_relaxed)) {
    // Newly out: its first probe comes `probe_every` from now.
    entry->last_probe_ns.store(now_ns, std::memory_order_relaxed);
    return Gate::kBreakerOpen;
  }
  if (!probe) return Gate::kBreakerOpen;
  int64_t last = entry->last_probe_ns.load(std::memory_order_relaxed);
  if (now_ns - last >= absl::ToInt64Nanoseconds(probe_every) &&
      entry->last_probe_ns.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) {
    return Gate::kProbe;
  }
  return Gate::kBreakerOpen;
}

bool EndpointBreakers::Control(const std::string& endpoint, BreakerCommand command) {
  std::shared_ptr<Entry> entry;
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(endpoint);
    if (it == entries_.end()) return false;
    entry = it->second;
  }
  switch (command) {
    case BreakerCommand::kForceOpen:
      entry->forced.store(kForcedOpen, std::memory_order_relaxed);
      break;
    case BreakerCommand::kForceClosed:
      entry->forced.store(kForcedClosed, std::memory_order_relaxed);
      break;
    case BreakerCommand::kAutomatic:
      entry->forced.store(kNotForced, std::memory_order_relaxed);
      break;
    case BreakerCommand::kReset:
      break;
  }
  // Outside the map's lock: the breaker's listener may run.
  entry->breaker->Control(command);
  return true;
}

std::vector<EndpointBreakers::EndpointState> EndpointBreakers::Snapshot() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    MutexLock lock(&mu_);
    entries.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) entries.push_back(entry);
  }
  std::vector<EndpointState> out;
  out.reserve(entries.size());
  for (const std::shared_ptr<Entry>& entry : entries) {
    EndpointState state;
    state.endpoint = entry->endpoint;
    state.breaker = entry->breaker->Snapshot();
    state.last_seen = absl::FromUnixNanos(entry->last_seen_ns.load(std::memory_order_relaxed));
    state.outcomes = entry->outcomes.load(std::memory_order_relaxed);
    state.refused = entry->refused.load(std::memory_order_relaxed);
    out.push_back(std::move(state));
  }
  std::sort(out.begin(), out.end(), [](const EndpointState& a, const EndpointState& b) {
    return a.endpoint < b.endpoint;
  });
  return out;
}

std::shared_ptr<EndpointBreakers::Entry> EndpointBreakers::Find(const std::string& endpoint,
                                                                absl::Time now) {
  MutexLock lock(&mu_);
  if (auto it = entries_.find(endpoint); it != entries_.end()) return it->second;
  Evict(now);
  auto entry = std::make_shared<Entry>(endpoint);
  entry->last_seen_ns.store(absl::ToUnixNanos(now), std::memory_order_relaxed);
  Entry* const raw = entry.get();
  // The breaker calls this outside its own locks; `raw` outlives its
  // breaker (Entry's last member).
  entry->breaker = options_.make([this, raw](const BreakerTransition& transition) {
    raw->state.store(static_cast<int>(transition.to), std::memory_order_release);
    if (options_.listener) options_.listener(raw->endpoint, transition, raw->breaker->Snapshot());
  });
  if (options_.recovery_probe.has_value()) {
    if (auto* three_state = dynamic_cast<ThreeStateBreaker*>(entry->breaker.get())) {
      entry->probe = std::make_unique<RecoveryProbe>(*options_.recovery_probe, *three_state, clock_);
    }
  }
  entries_.emplace(endpoint, entry);
  known_.store(static_cast<int>(entries_.size()), std::memory_order_relaxed);
  return entry;
}

void EndpointBreakers::Evict(absl::Time now) {
  if (static_cast<int>(entries_.size()) < options_.max_endpoints) return;
  const int64_t since_ns = absl::ToUnixNanos(now - options_.recent);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second->last_seen_ns.load(std::memory_order_relaxed) < since_ns &&
        it->second->forced.load(std::memory_order_relaxed) == kNotForced) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  // At the bound, the one seen longest ago, forced ones last.
  while (static_cast<int>(entries_.size()) >= options_.max_endpoints) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      const bool a_forced = a.second->forced.load(std::memory_order_relaxed) != kNotForced;
      const bool b_forced = b.second->forced.load(std::memory_order_relaxed) != kNotForced;
      if (a_forced != b_forced) return b_forced;
      return a.second->last_seen_ns.load(std::memory_order_relaxed) <
             b.second->last_seen_ns.load(std::memory_order_relaxed);
    });
    entries_.erase(oldest);
  }
}

}  // namespace resilience
