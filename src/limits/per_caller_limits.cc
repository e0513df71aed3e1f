#include "src/limits/per_caller_limits.h"

#include <cinttypes>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "src/limits/token_bucket.h"

namespace resilience {
namespace {

constexpr int64_t kMaxConcurrencyPerKey = 1'000'000;
// The default bucket's name in the store, after the prefix: no stored key
// is "#default" (a stored key starting with '#' is '#' and 16 hex digits).
constexpr absl::string_view kDefaultFleetKey = "#default";

#define GRPC_RESILIENCE_ADD_COUNTER(name) to.name += from.name;

void Add(const GlobalRateLimiterStats& from, GlobalRateLimiterStats& to) {
  GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(GRPC_RESILIENCE_ADD_COUNTER)
}

#undef GRPC_RESILIENCE_ADD_COUNTER

// The queue of a fleet-wide limit: named by the prefix and the limit's name
// (where the store is), logging where the limit's options say.
LeaseQueue::Options QueueOptions(const PerCallerLimits::Options& options) {
  LeaseQueue::Options queue;
  queue.name = absl::StrCat("'", options.fleet_prefix, ":*'",
                            options.fleet->name.empty() ? "" : " ", options.fleet->name);
  queue.log = options.fleet->log;
  return queue;
}

bool KeptAsItIs(absl::string_view raw) {
  if (raw.size() > PerCallerLimits::kMaxKeyBytes || raw.front() == '#') return false;
  for (const char c : raw) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return true;
}

}  // namespace

absl::Status PerCallerLimits::Validate(const Options& options) {
  if (options.max_concurrency == 0 && options.rate_per_second == 0 && !options.fleet) {
    return absl::InvalidArgumentError(
        "set max_concurrency, rate_per_second, fleet, or more than one");
  }
  if (options.fleet) {
    if (absl::Status s = GlobalRateLimiter::Validate(*options.fleet); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("fleet.", s.message()));
    }
  }
  if (options.max_concurrency < 0 || options.max_concurrency > kMaxConcurrencyPerKey) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_concurrency: must be in [1, 1000000], got ", options.max_concurrency));
  }
  if (options.rate_per_second != 0) {
    if (absl::Status s = TokenBucket::Validate(options.rate_per_second, options.burst); !s.ok()) {
      return s;
    }
  } else if (options.burst != 0) {
    return absl::InvalidArgumentError("burst: needs rate_per_second");
  }
  if (options.max_keys < 1 || options.max_keys > kMaxKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_keys: must be in [1, 1000000], got ", options.max_keys));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PerCallerLimits>> PerCallerLimits::Create(const Options& options,
                                                                         Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<PerCallerLimits>(new PerCallerLimits(options, clock));
}

PerCallerLimits::PerCallerLimits(const Options& options, Clock& clock)
    : options_(options),
      interval_ns_(options.rate_per_second > 0 ? TokenBucket::IntervalNanos(options.rate_per_second)
                                               : 0),
      // Validate(): burst x T within TokenBucket::kMaxRefillNanos.
      capacity_ns_(options.burst * interval_ns_),
      clock_(clock),
      fleet_queue_(options.fleet ? std::make_unique<LeaseQueue>(QueueOptions(options), clock)
                                 : nullptr),
      default_bucket_(NewBucket("")) {}

std::shared_ptr<PerCallerLimits::Bucket> PerCallerLimits::NewBucket(std::string key) {
  auto bucket = std::make_shared<Bucket>(std::move(key));
  bucket->tat_ns.store(absl::ToUnixNanos(clock_.Now()), std::memory_order_relaxed);
  if (fleet_queue_ != nullptr) {
    GlobalRateLimiter::Options fleet = *options_.fleet;
    // The queue logs once for all keys: no log, and no name to log.
    fleet.log = nullptr;
    fleet.name.clear();
    // Validate() checked these options: Create() cannot fail.
    bucket->fleet =
        *KeyedLease::Create(FleetKey(bucket->key), std::move(fleet), clock_, *fleet_queue_);
  }
  return bucket;
}

std::string PerCallerLimits::FleetKey(absl::string_view key) const {
  return absl::StrCat(options_.fleet_prefix, ":", key.empty() ? kDefaultFleetKey : key);
}

GlobalRateLimiterStats PerCallerLimits::FleetStats() const {
  GlobalRateLimiterStats to;
  if (fleet_queue_ == nullptr) return to;
  Add(default_bucket_->fleet->limiter().Stats(), to);
  MutexLock lock(&mu_);
  Add(evicted_fleet_, to);
  for (const std::shared_ptr<Bucket>& bucket : lru_) Add(bucket->fleet->limiter().Stats(), to);
  return to;
}

std::string PerCallerLimits::HashedKey(absl::string_view raw) {
  // FNV-1a, 64 bits: stable across processes and builds, so that every
  // server of a fleet names a hashed key alike (the fleet-wide limit).
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : raw) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, hash);
  return absl::StrCat("#", hex);
}

std::string PerCallerLimits::StoredKey(absl::string_view raw, bool* hashed) {
  const bool hash = !raw.empty() && !KeptAsItIs(raw);
  if (hashed != nullptr) *hashed = hash;
  return hash ? HashedKey(raw) : std::string(raw);
}

PerCallerLimits::Slot& PerCallerLimits::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    bucket_ = std::move(other.bucket_);
  }
  return *this;
}

void PerCallerLimits::Slot::Release() {
  if (bucket_ == nullptr) return;
  bucket_->in_flight.fetch_sub(1, std::memory_order_acq_rel);
  bucket_.reset();
}

int64_t PerCallerLimits::keys_tracked() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(index_.size());
}

std::shared_ptr<PerCallerLimits::Bucket> PerCallerLimits::BucketFor(const std::string& key) {
  if (key.empty()) return default_bucket_;
  if (const auto found = index_.find(key); found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);
    return *found->second;
  }
  if (static_cast<int64_t>(index_.size()) >= options_.max_keys) {
    // The least recent idle key makes room; a slot's holder may still
    // decrement it after this, which is why only idle keys go.
    auto victim = lru_.end();
    int scanned = 0;
    for (auto it = lru_.end(); it != lru_.begin() && scanned < kEvictionScan; ++scanned) {
      --it;
      if ((*it)->in_flight.load(std::memory_order_acquire) == 0) {
        victim = it;
        break;
      }
    }
    if (victim == lru_.end()) {
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      return default_bucket_;
    }
    index_.erase((*victim)->key);
    // Its fleet bucket goes with it (tokens held unused are dropped); its
    // counters stay in the sums.
    if ((*victim)->fleet != nullptr) Add((*victim)->fleet->limiter().Stats(), evicted_fleet_);
    lru_.erase(victim);
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  std::shared_ptr<Bucket> bucket = NewBucket(key);
  lru_.push_front(bucket);
  index_.emplace(absl::string_view(bucket->key), lru_.begin());
  return bucket;
}

PerCallerLimits::Admission PerCallerLimits::TryAcquire(absl::string_view raw_key,
                                                       const CriticalityShares& shares,
                                                       Criticality level) {
  Admission admission;
  bool hashed = false;
  std::string key = StoredKey(raw_key, &hashed);
  if (hashed) hashed_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  std::shared_ptr<Bucket> bucket = BucketFor(key);
  admission.default_bucket = bucket == default_bucket_;
  if (options_.max_concurrency > 0) {
    admission.cap = shares.ConcurrencyCap(options_.max_concurrency, level);
    if (bucket->in_flight.load(std::memory_order_acquire) >= admission.cap) {
      rejected_concurrency_.fetch_add(1, std::memory_order_relaxed);
      admission.verdict = Verdict::kConcurrency;
      admission.key = bucket->key;
      return admission;
    }
  }
  if (interval_ns_ > 0 &&
      !TokenBucket::TakeToken(bucket->tat_ns, absl::ToUnixNanos(clock_.Now()), interval_ns_,
                              shares.BucketCapacity(capacity_ns_, interval_ns_, level),
                              &admission.retry_after)) {
    rejected_rate_.fetch_add(1, std::memory_order_relaxed);
    admission.verdict = Verdict::kRate;
    admission.key = bucket->key;
    return admission;
  }
  // Never waits on the store: a leased token or the key's local share.
  if (bucket->fleet != nullptr &&
      !bucket->fleet->limiter().TryAcquire(shares, level, &admission.retry_after)) {
    rejected_fleet_rate_.fetch_add(1, std::memory_order_relaxed);
    admission.verdict = Verdict::kFleetRate;
    admission.key = bucket->key;
    return admission;
  }
  if (options_.max_concurrency > 0) {
    bucket->in_flight.fetch_add(1, std::memory_order_acq_rel);
    admission.slot = Slot(std::move(bucket));
  }
  return admission;
}

}  // namespace resilience
