#include "examples/cache_service/stale_reads.h"

#include "examples/cache_service/cache_calls.h"
#include "grpc_resilience/fallback.h"

namespace cache_service {

absl::Status StaleReads::Install(resilience::ClientResilience& resilience,
                                 resilience::FallbackOptions options) {
  return resilience::SetFallback<cache::v1::GetReq, cache::v1::GetResp>(
      resilience, "/cache.v1.CacheService/Get",
      [this](const cache::v1::GetReq& request, const grpc::Status& original,
             cache::v1::GetResp* response) {
        std::optional<std::string> value = Find(request.key());
        if (!value.has_value()) {
          misses_.fetch_add(1);
          return original;  // never seen: the call keeps its failure
        }
        served_.fetch_add(1);
        response->set_value(*std::move(value));
        return grpc::Status::OK;
      },
      std::move(options));
}

void StaleReads::Remember(const std::string& key, const std::string& value) {
  example_sync::MutexLock lock(&mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->second = value;
    entries_.splice(entries_.begin(), entries_, it->second);
    return;
  }
  entries_.emplace_front(key, value);
  index_[key] = entries_.begin();
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

std::optional<std::string> StaleReads::Find(const std::string& key) {
  example_sync::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, it->second);
  return it->second->second;
}

grpc::Status StoreRemembering(cache::v1::CacheService::StubInterface& stub, StaleReads& copy,
                              const std::string& key, const std::string& value,
                              absl::Duration timeout) {
  grpc::Status status = StoreValue(stub, key, value, timeout);
  if (status.ok()) copy.Remember(key, value);
  return status;
}

grpc::Status GetRemembering(cache::v1::CacheService::StubInterface& stub, StaleReads& copy,
                            const std::string& key, std::string* value, bool* stale,
                            absl::Duration timeout) {
  grpc::Status status = GetValue(stub, key, value, timeout, stale);
  if (status.ok() && !*stale) copy.Remember(key, *value);
  return status;
}

}  // namespace cache_service
