// File: examples/cache_service/cache_calls.h
//
// One Store, Get or Dump call with a deadline, for the demo and the tests.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_CALLS_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_CALLS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "grpcpp/support/status.h"

namespace cache_service {

// Each call's deadline is `timeout` from now.
grpc::Status StoreValue(cache::v1::CacheService::StubInterface& stub, const std::string& key,
                        const std::string& value, absl::Duration timeout);
// `value` receives the value (empty unless the status is OK); `fell_back`,
// when given, whether Get's fallback answered (FellBack(), a stale read).
grpc::Status GetValue(cache::v1::CacheService::StubInterface& stub, const std::string& key,
                      std::string* value, absl::Duration timeout, bool* fell_back = nullptr);
// `keys` receives the keys Dump streamed, in order.
grpc::Status DumpKeys(cache::v1::CacheService::StubInterface& stub, std::vector<std::string>* keys,
                      absl::Duration timeout);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_CALLS_H_
