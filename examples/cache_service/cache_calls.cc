#include "examples/cache_service/cache_calls.h"

#include <memory>

#include "absl/time/clock.h"
#include "grpc_resilience/fallback.h"
#include "grpcpp/client_context.h"

namespace cache_service {

grpc::Status StoreValue(cache::v1::CacheService::StubInterface& stub, const std::string& key,
                        const std::string& value, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  cache::v1::StoreReq request;
  request.set_key(key);
  request.set_value(value);
  cache::v1::StoreResp response;
  return stub.Store(&context, request, &response);
}

grpc::Status GetValue(cache::v1::CacheService::StubInterface& stub, const std::string& key,
                      std::string* value, absl::Duration timeout, bool* fell_back) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  grpc::Status status = stub.Get(&context, request, &response);
  *value = response.value();
  if (fell_back != nullptr) *fell_back = resilience::FellBack(context);
  return status;
}

grpc::Status DumpKeys(cache::v1::CacheService::StubInterface& stub, std::vector<std::string>* keys,
                      absl::Duration timeout) {
  keys->clear();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  std::unique_ptr<grpc::ClientReaderInterface<cache::v1::DumpItem>> reader =
      stub.Dump(&context, cache::v1::DumpReq());
  cache::v1::DumpItem item;
  while (reader->Read(&item)) keys->push_back(item.key());
  return reader->Finish();
}

}  // namespace cache_service
