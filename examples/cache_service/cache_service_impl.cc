#include "examples/cache_service/cache_service_impl.h"

#include <string>
#include <utility>
#include <vector>

#include "src/grpc_common/status_conversion.h"

namespace cache_service {

grpc::Status CacheServiceImpl::Get(grpc::ServerContext* /*context*/,
                                   const cache::v1::GetReq* request,
                                   cache::v1::GetResp* response) {
  absl::StatusOr<std::string> value = store_->Get(request->key());
  if (!value.ok()) return resilience::ToGrpcStatus(value.status());
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status CacheServiceImpl::Store(grpc::ServerContext* /*context*/,
                                     const cache::v1::StoreReq* request,
                                     cache::v1::StoreResp* /*response*/) {
  return resilience::ToGrpcStatus(store_->Store(request->key(), request->value()));
}

grpc::Status CacheServiceImpl::Dump(grpc::ServerContext* context,
                                    const cache::v1::DumpReq* /*request*/,
                                    grpc::ServerWriter<cache::v1::DumpItem>* writer) {
  // The cursor is the key of the last item sent: "" (before every key, as
  // keys are never empty) until the first one.
  cache::v1::DumpItem item;
  while (true) {
    // The store's lock is held only inside EntriesAfter(), never across a
    // Write, which may wait for the client for as long as it likes.
    std::vector<std::pair<std::string, std::string>> run =
        store_->EntriesAfter(item.key(), kDumpRunEntries, kDumpRunBytes);
    if (run.empty()) return grpc::Status::OK;
    for (auto& [key, value] : run) {
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "Dump: client went away");
      }
      item.set_key(std::move(key));
      item.set_value(std::move(value));
      if (!writer->Write(item)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "Dump: stream closed by client");
      }
    }
  }
}

}  // namespace cache_service
