// File: examples/cache_service/cache_service_impl.h
//
// The gRPC face of CacheStore: cache.v1.CacheService on the callback server
// API. Store errors (absl::Status) become gRPC statuses with the same code.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_

#include <cstddef>

#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_store.h"

namespace cache_service {

// CacheServiceImpl
//
// Keys are any non-empty bytes (`bytes` in cache.proto, so no UTF-8 check).
// Get: the value, NOT_FOUND naming the key (C-escaped), INVALID_ARGUMENT for
// an empty key.
// Store: INVALID_ARGUMENT for an empty key or an oversized value.
// Dump: streams the entries in key order without copying the store: it walks
// it with CacheStore::EntriesAfter(), copying at most kDumpRunEntries entries
// and kDumpRunBytes bytes (or a single larger entry) at a time under the
// store's lock, and writes them to the client with the lock released. So a
// Dump holds one run and the message being sent (flow control holds back the
// rest), whatever the size of the store, and a client that stops reading
// holds no lock. What the client gets: every key present for the whole Dump
// exactly once, in strictly increasing key order, each with its value at the
// moment its run was copied; keys stored or evicted during the Dump may or
// may not appear. It is not a snapshot of one instant. Stops early,
// CANCELLED, if the client goes away.
//
// Why the callback API: no call holds a thread. A Dump whose client stops
// reading waits for flow control in a reactor, not on a blocked thread, and
// a flood of calls (HTTP/2 rapid reset) is taken in as fast as the transport
// reads it instead of queueing for a thread pool (docs/server-hardening.md).
// Does not own the store. This class is thread-safe.
class CacheServiceImpl final : public cache::v1::CacheService::CallbackService {
 public:
  // Bounds of one run of entries a Dump copies from the store at a time.
  static constexpr size_t kDumpRunEntries = 256;
  static constexpr size_t kDumpRunBytes = 64 << 10;

  explicit CacheServiceImpl(CacheStore* store) : store_(store) {}

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const cache::v1::GetReq* request,
                                cache::v1::GetResp* response) override;
  grpc::ServerUnaryReactor* Store(grpc::CallbackServerContext* context,
                                  const cache::v1::StoreReq* request,
                                  cache::v1::StoreResp* response) override;
  grpc::ServerWriteReactor<cache::v1::DumpItem>* Dump(grpc::CallbackServerContext* context,
                                                      const cache::v1::DumpReq* request) override;

 private:
  CacheStore* const store_;
};

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVICE_IMPL_H_
