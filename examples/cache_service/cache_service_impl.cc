#include "examples/cache_service/cache_service_impl.h"

#include "src/grpc_common/status_conversion.h"
#include "src/server_interceptors/rejected_by_server_interceptor.h"

namespace cache_service {

// Each handler first skips calls that a server interceptor rejected (their
// status is replaced by the interceptor).

grpc::Status CacheServiceImpl::Get(grpc::ServerContext* context,
                                   const cache::v1::GetReq* request,
                                   cache::v1::GetResp* response) {
  if (resilience::RejectedByServerInterceptor(*context)) return grpc::Status::OK;
  absl::StatusOr<std::string> value = store_->Get(request->key());
  if (!value.ok()) return resilience::ToGrpcStatus(value.status());
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status CacheServiceImpl::Store(grpc::ServerContext* context,
                                     const cache::v1::StoreReq* request,
                                     cache::v1::StoreResp* /*response*/) {
  if (resilience::RejectedByServerInterceptor(*context)) return grpc::Status::OK;
  return resilience::ToGrpcStatus(store_->Store(request->key(), request->value()));
}

grpc::Status CacheServiceImpl::Dump(grpc::ServerContext* context,
                                    const cache::v1::DumpReq* /*request*/,
                                    grpc::ServerWriter<cache::v1::DumpItem>* writer) {
  if (resilience::RejectedByServerInterceptor(*context)) return grpc::Status::OK;
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
