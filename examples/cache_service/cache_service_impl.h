// File: examples/cache_service/cache_service_impl.h
//
// The gRPC face of CacheStore: cache.v1.CacheService on the synchronous server
// API. Store errors (absl::Status) become gRPC statuses with the same code.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_

#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_store.h"

namespace cache_service {

// CacheServiceImpl
//
// Get: the value, NOT_FOUND naming the key, INVALID_ARGUMENT for an empty key.
// Store: INVALID_ARGUMENT for an empty key or an oversized value.
// Dump: streams a consistent snapshot in key order; stops early if the client
// goes away.
// Does not own the store. This class is thread-safe.
class CacheServiceImpl final : public cache::v1::CacheService::Service {
 public:
  explicit CacheServiceImpl(CacheStore* store) : store_(store) {}

  grpc::Status Get(grpc::ServerContext* context, const cache::v1::GetReq* request,
                   cache::v1::GetResp* response) override;
  grpc::Status Store(grpc::ServerContext* context, const cache::v1::StoreReq* request,
                     cache::v1::StoreResp* response) override;
  grpc::Status Dump(grpc::ServerContext* context, const cache::v1::DumpReq* request,
                    grpc::ServerWriter<cache::v1::DumpItem>* writer) override;

 private:
  CacheStore* const store_;
};

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_
