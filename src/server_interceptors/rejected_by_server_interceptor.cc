#include "src/server_interceptors/rejected_by_server_interceptor.h"

#include <cstring>

namespace resilience {

bool RejectedByServerInterceptor(const grpc::ServerContextBase& context) {
  return internal::IsMarkedRejected(context.client_metadata());
}

namespace internal {

void MarkRejected(std::multimap<grpc::string_ref, grpc::string_ref>* metadata,
                  const char* reason) {
  metadata->emplace(grpc::string_ref(kRejectedMarkerKey, std::strlen(kRejectedMarkerKey)),
                    grpc::string_ref(reason, std::strlen(reason)));
}

bool IsMarkedRejected(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  return metadata.find(grpc::string_ref(kRejectedMarkerKey, std::strlen(kRejectedMarkerKey))) !=
         metadata.end();
}

void ClearRejectedMark(std::multimap<grpc::string_ref, grpc::string_ref>* metadata) {
  metadata->erase(grpc::string_ref(kRejectedMarkerKey, std::strlen(kRejectedMarkerKey)));
}

}  // namespace internal
}  // namespace resilience
