#include "src/limits/global_rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/limits/token_bucket.h"

namespace resilience {
namespace {

constexpr int kMaxExpectedReplicas = 10000;
constexpr absl::Duration kMinLeaseInterval = absl::Milliseconds(1);
constexpr absl::Duration kMaxLeaseInterval = absl::Seconds(10);
constexpr absl::Duration kMaxLeaseLifetime = absl::Hours(1);
// The observed share is the tokens granted over windows of this length.
constexpr int64_t kShareWindowNs = 1'000'000'000;
// Distinct failure reasons logged per outage, beyond the first.
constexpr size_t kMaxFailureReasonsLogged = 8;
// The local share is never below this fraction of the fleet's rate.
constexpr double kMinShareFraction = 0.01;

absl::Status Invalid(absl::string_view field, absl::string_view want, absl::string_view value) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", want, ", got ", value));
}

}  // namespace

absl::Status GlobalRateLimiter::Validate(const Options& o) {
  if (absl::Status s = TokenBucket::Validate(o.rate_per_second, o.burst); !s.ok()) return s;
  if (o.expected_replicas < 1 || o.expected_replicas > kMaxExpectedReplicas) {
    return Invalid("expectedReplicas", absl::StrCat("in [1, ", kMaxExpectedReplicas, "]"),
                   absl::StrCat(o.expected_replicas));
  }
  if (o.lease_interval < kMinLeaseInterval || o.lease_interval > kMaxLeaseInterval) {
    return Invalid("leaseInterval", "in [1ms, 10s]", absl::FormatDuration(o.lease_interval));
  }
  if (o.lease_lifetime < o.lease_interval || o.lease_lifetime > kMaxLeaseLifetime) {
    return Invalid("leaseLifetime",
                   absl::StrCat("in [leaseInterval (", absl::FormatDuration(o.lease_interval),
                                "), 1h]"),
                   absl::FormatDuration(o.lease_lifetime));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GlobalRateLimiter>> GlobalRateLimiter::Create(Options options,
                                                                             Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<GlobalRateLimiter>(new GlobalRateLimiter(std::move(options), clock));
}

GlobalRateLimiter::GlobalRateLimiter(Options options, Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      max_lease_(std::max<int64_t>(
          1, std::min<int64_t>(options_.burst,
                               static_cast<int64_t>(std::ceil(
                                   options_.rate_per_second *
                                   absl::ToDoubleSeconds(options_.lease_interval)))))) {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  MutexLock lock(&mu_);
  demand_since_ns_ = now_ns;
  window_start_ns_ = now_ns;
  low_watermark_.store(0, std::memory_order_relaxed);
  SetLocalRate(ShareRate());
}

void GlobalRateLimiter::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

bool GlobalRateLimiter::TryAcquire(const CriticalityShares& shares, Criticality level,
                                   absl::Duration* retry_after) {
  demand_.fetch_add(1, std::memory_order_relaxed);
  const int64_t reserve = shares.LeaseReserve(max_lease_, level);
  int64_t tokens = tokens_.load(std::memory_order_relaxed);
  while (tokens > reserve) {
    if (tokens_.compare_exchange_weak(tokens, tokens - 1, std::memory_order_relaxed)) {
      if (tokens - 1 <= low_watermark_.load(std::memory_order_relaxed)) {
        if (LeaseSource* s = source_.load(std::memory_order_acquire)) s->Wake();
      }
      admitted_leased.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  if (LeaseSource* s = source_.load(std::memory_order_acquire)) s->Wake();
  if (mode_.load(std::memory_order_acquire) != Mode::kGlobal) {
    if (LocalAcquire(absl::ToUnixNanos(clock_.Now()), shares, level, retry_after)) {
      admitted_local.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  } else if (retry_after != nullptr) {
    *retry_after = absl::Nanoseconds(retry_after_ns_.load(std::memory_order_relaxed));
  }
  rejected.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool GlobalRateLimiter::LocalAcquire(int64_t now_ns, const CriticalityShares& shares,
                                     Criticality level, absl::Duration* retry_after) {
  // T and the capacity change with the share; a call that reads one before
  // and one after a change is judged by a bucket halfway between the two.
  const int64_t interval = local_interval_ns_.load(std::memory_order_relaxed);
  return TokenBucket::TakeToken(
      local_tat_ns_, now_ns, interval,
      shares.BucketCapacity(local_capacity_ns_.load(std::memory_order_relaxed), interval, level),
      retry_after);
}

void GlobalRateLimiter::SetLocalRate(double rate) {
  rate = std::clamp(rate, TokenBucket::kMinRatePerSecond, options_.rate_per_second);
  // The burst scaled by the share, within TokenBucket's bounds.
  const int64_t burst = std::clamp<int64_t>(
      std::llround(static_cast<double>(options_.burst) * rate / options_.rate_per_second), 1,
      TokenBucket::MaxBurst(rate));
  const int64_t interval = TokenBucket::IntervalNanos(rate);
  local_interval_ns_.store(interval, std::memory_order_relaxed);
  local_capacity_ns_.store(burst * interval, std::memory_order_relaxed);
}

double GlobalRateLimiter::local_rate() const {
  const int64_t interval = local_interval_ns_.load(std::memory_order_relaxed);
  return interval > 0 ? 1e9 / static_cast<double>(interval) : 0;
}

double GlobalRateLimiter::ShareRate() const {
  const double rate = options_.rate_per_second;
  const double even = rate / options_.expected_replicas;
  double share = even;
  if (observed_rate_ >= 0) {
    // A fleet that used the whole rate shared it as observed; one that did
    // not may need more than it took, up to the even split.
    share = observed_short_ ? observed_rate_ : std::max(observed_rate_, even);
  }
  return std::clamp(share, rate * kMinShareFraction, rate);
}

void GlobalRateLimiter::NoteDemand(int64_t now_ns) {
  const int64_t elapsed = now_ns - demand_since_ns_;
  const int64_t interval = absl::ToInt64Nanoseconds(options_.lease_interval);
  const int64_t demand = demand_.load(std::memory_order_relaxed);
  if (elapsed < interval) {
    // A jump in demand is seen before the interval ends: once the calls
    // since the last estimate exceed what the current lease covers, their
    // rate so far raises the estimate (it only ever raises it here).
    const double lease = std::ceil(demand_rate_ * absl::ToDoubleSeconds(options_.lease_interval));
    if (elapsed > 0 && static_cast<double>(demand - demand_seen_) > std::max(lease, 1.0)) {
      demand_rate_ = std::max(demand_rate_, static_cast<double>(demand - demand_seen_) * 1e9 /
                                                static_cast<double>(elapsed));
    }
    return;
  }
  const double rate = static_cast<double>(demand - demand_seen_) * 1e9 / static_cast<double>(elapsed);
  // Up at once (a lease too small costs rejections), down smoothly.
  demand_rate_ = rate >= demand_rate_ ? rate : 0.5 * demand_rate_ + 0.5 * rate;
  demand_seen_ = demand;
  demand_since_ns_ = now_ns;
}

int64_t GlobalRateLimiter::LeaseWanted() {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  MutexLock lock(&mu_);
  NoteDemand(now_ns);
  int64_t held = tokens_.load(std::memory_order_relaxed);
  if (held > 0 && now_ns - last_lease_ns_ > absl::ToInt64Nanoseconds(options_.lease_lifetime)) {
    held = tokens_.exchange(0, std::memory_order_relaxed);
    if (held > 0) tokens_expired.fetch_add(held, std::memory_order_relaxed);
    held = 0;
  }
  const double want = demand_rate_ * absl::ToDoubleSeconds(options_.lease_interval);
  const int64_t lease =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil(want)), 1, max_lease_);
  low_watermark_.store(lease / 2, std::memory_order_relaxed);
  if (held > lease / 2) return 0;
  return lease - std::max<int64_t>(held, 0);
}

void GlobalRateLimiter::OnLease(int64_t requested, int64_t granted, double remaining) {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  MutexLock lock(&mu_);
  leases.fetch_add(1, std::memory_order_relaxed);
  if (granted > 0) {
    tokens_.fetch_add(granted, std::memory_order_relaxed);
    tokens_leased.fetch_add(granted, std::memory_order_relaxed);
    last_lease_ns_ = now_ns;
  }
  // The pushback of a call that finds no token: until the fleet's bucket
  // has one again, or a round trip.
  const double missing = 1.0 - remaining;
  const absl::Duration dry = missing <= 0 ? absl::ZeroDuration()
                                          : absl::Seconds(missing / options_.rate_per_second);
  retry_after_ns_.store(
      absl::ToInt64Nanoseconds(std::clamp(dry, absl::Milliseconds(1), options_.lease_interval)),
      std::memory_order_relaxed);
  window_granted_ += granted;
  if (granted < requested) window_short_ = true;
  if (now_ns - window_start_ns_ >= kShareWindowNs) {
    observed_rate_ = static_cast<double>(window_granted_) * 1e9 /
                     static_cast<double>(now_ns - window_start_ns_);
    observed_short_ = window_short_;
    window_start_ns_ = now_ns;
    window_granted_ = 0;
    window_short_ = false;
  }
  const Mode was = mode_.exchange(Mode::kGlobal, std::memory_order_acq_rel);
  if (was == Mode::kLocal) {
    recoveries.fetch_add(1, std::memory_order_relaxed);
    Log(absl::StrCat("global rate limit ", options_.name, ": store reachable again, back to ",
                     options_.rate_per_second, "/s for the fleet"));
  } else if (was == Mode::kStarting) {
    Log(absl::StrCat("global rate limit ", options_.name, ": in use, ",
                     options_.rate_per_second, "/s for the fleet"));
  }
}

void GlobalRateLimiter::OnFailure(absl::string_view why) {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  MutexLock lock(&mu_);
  lease_failures.fetch_add(1, std::memory_order_relaxed);
  const Mode was = mode_.load(std::memory_order_acquire);
  if (was == Mode::kLocal) {
    // Already on the local share: a new reason (the connection reset, then
    // the password refused) is worth a line, each one once per outage.
    if (failures_logged_.size() < kMaxFailureReasonsLogged &&
        std::find(failures_logged_.begin(), failures_logged_.end(), why) ==
            failures_logged_.end()) {
      failures_logged_.emplace_back(why);
      Log(absl::StrFormat("global rate limit %s: still on the local share: %s", options_.name,
                          why));
    }
    return;
  }
  failures_logged_.assign(1, std::string(why));
  // A partial window of at least a tenth of one still tells the share.
  if (now_ns - window_start_ns_ >= kShareWindowNs / 10 && window_granted_ > 0) {
    const double partial = static_cast<double>(window_granted_) * 1e9 /
                           static_cast<double>(now_ns - window_start_ns_);
    if (observed_rate_ < 0) {
      observed_rate_ = partial;
      observed_short_ = window_short_;
    }
  }
  const double share = ShareRate();
  SetLocalRate(share);
  // Leaving the global limit, the local bucket starts empty from now: the
  // leased tokens still held are this moment's allowance. Before the store
  // ever answered (kStarting), the local bucket was the one in use, and goes
  // on as it was: a store that cannot be reached at start takes away no
  // call the starting share would have admitted.
  if (was == Mode::kGlobal) {
    local_tat_ns_.store(now_ns + local_capacity_ns_.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
  }
  mode_.store(Mode::kLocal, std::memory_order_release);
  fallbacks.fetch_add(1, std::memory_order_relaxed);
  Log(absl::StrFormat("global rate limit %s: store unreachable (%s), local share %.6g/s of %.6g/s",
                      options_.name, why, local_rate(), options_.rate_per_second));
}

void GlobalRateLimiter::OnAnomaly(Anomaly kind) {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  const int i = static_cast<int>(kind);
  std::atomic<int64_t>* const counters[] = {&keys_lost, &bad_values, &clock_steps};
  counters[i]->fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  ++anomalies_unlogged_[i];
  if (anomaly_logged_ns_[i] != 0 &&
      now_ns - anomaly_logged_ns_[i] < absl::ToInt64Nanoseconds(kAnomalyLogInterval)) {
    return;
  }
  std::string line;
  switch (kind) {
    case Anomaly::kKeyLost:
      line = absl::StrFormat(
          "bucket lost (evicted, flushed, deleted, or the store restarted empty) and started "
          "again full: up to one extra burst of %d",
          options_.burst);
      break;
    case Anomaly::kBadValue:
      line = absl::StrFormat(
          "bucket held a value out of range (not a number, negative, infinite, or not a "
          "hash): clamped into [0, %d] tokens",
          options_.burst);
      break;
    case Anomaly::kClockBack:
      line = "bucket's last refill was ahead of the store's clock (its clock stepped back, or "
             "a failover to a replica whose clock lags): refilling from the store's now";
      break;
  }
  const std::string times =
      anomaly_logged_ns_[i] == 0
          ? ""
          : absl::StrCat(" (", anomalies_unlogged_[i], " times since the last such line)");
  Log(absl::StrCat("global rate limit ", options_.name, ": ", line, times));
  anomaly_logged_ns_[i] = now_ns;
  anomalies_unlogged_[i] = 0;
}

absl::Duration GlobalRateLimiter::DryWait() const {
  return absl::Nanoseconds(retry_after_ns_.load(std::memory_order_relaxed));
}

GlobalRateLimiterStats GlobalRateLimiter::Stats() const {
  GlobalRateLimiterStats to;
  const GlobalRateLimiter& from = *this;
  GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
  return to;
}

}  // namespace resilience
