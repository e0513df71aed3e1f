#include "examples/cache_service/cache_service_impl.h"

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
  cache::v1::DumpItem item;
  for (auto& [key, value] : store_->Dump()) {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "Dump: client went away");
    }
    item.set_key(std::move(key));
    item.set_value(std::move(value));
    if (!writer->Write(item)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "Dump: stream closed by client");
    }
  }
  return grpc::Status::OK;
}

}  // namespace cache_service
