#include "examples/cache_service/cache_store.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace cache_service {

absl::Status CacheStore::Validate(const Options& options) {
  if (options.max_entries == 0) {
    return absl::InvalidArgumentError("max_entries: must be > 0, got 0");
  }
  if (options.max_value_bytes == 0) {
    return absl::InvalidArgumentError("max_value_bytes: must be > 0, got 0");
  }
  if (options.max_total_bytes < options.max_value_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_total_bytes: must be >= max_value_bytes (", options.max_value_bytes,
        "), got ", options.max_total_bytes));
  }
  return absl::OkStatus();
}

CacheStore::CacheStore(const Options& options) : options_(options) {}

absl::StatusOr<std::string> CacheStore::Get(absl::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("key: must not be empty");
  example_sync::MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    return absl::NotFoundError(absl::StrCat("key not found: \"", absl::CEscape(key), "\""));
  }
  Touch(it);
  return it->second.value;
}

absl::Status CacheStore::Store(absl::string_view key, std::string value) {
  if (key.empty()) return absl::InvalidArgumentError("key: must not be empty");
  if (value.size() > options_.max_value_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of key \"", absl::CEscape(key), "\" is ", value.size(),
                     " bytes, over the limit of ", options_.max_value_bytes, " bytes"));
  }
  if (key.size() + value.size() > options_.max_total_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes plus value of ", value.size(),
                     " bytes is over the store's total limit of ",
                     options_.max_total_bytes, " bytes"));
  }
  example_sync::MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    total_bytes_ -= it->second.value.size();
    total_bytes_ += value.size();
    it->second.value = std::move(value);
    Touch(it);
  } else {
    total_bytes_ += key.size() + value.size();
    it = map_.emplace(std::string(key), Entry{std::move(value), {}}).first;
    lru_.push_front(it);
    it->second.lru_position = lru_.begin();
  }
  EvictWhileOverBounds();
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> CacheStore::EntriesAfter(
    absl::string_view after, size_t max_entries, size_t max_bytes) const {
  std::vector<std::pair<std::string, std::string>> out;
  size_t bytes = 0;
  example_sync::MutexLock lock(&mu_);
  for (auto it = map_.upper_bound(after); it != map_.end(); ++it) {
    const size_t entry_bytes = it->first.size() + it->second.value.size();
    // The first entry always goes in, so that a walk moves on even past an
    // entry larger than max_bytes.
    if (!out.empty() && (out.size() >= max_entries || bytes + entry_bytes > max_bytes)) break;
    out.emplace_back(it->first, it->second.value);
    bytes += entry_bytes;
  }
  return out;
}

CacheStore::Stats CacheStore::GetStats() const {
  example_sync::MutexLock lock(&mu_);
  return Stats{map_.size(), total_bytes_, evictions_};
}

void CacheStore::Touch(Map::iterator it) {
  lru_.splice(lru_.begin(), lru_, it->second.lru_position);
}

void CacheStore::EvictWhileOverBounds() {
  // The newest entry is at the front and fits by itself (Store() refuses one
  // that does not), so eviction stops before it: at least one entry remains.
  while (lru_.size() > 1 && (map_.size() > options_.max_entries ||
                              total_bytes_ > options_.max_total_bytes)) {
    Map::iterator victim = lru_.back();
    lru_.pop_back();
    total_bytes_ -= victim->first.size() + victim->second.value.size();
    map_.erase(victim);
    ++evictions_;
  }
}

}  // namespace cache_service
