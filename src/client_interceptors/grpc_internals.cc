#include "src/client_interceptors/grpc_internals.h"

#include <link.h>

#include <cstdint>

#include "grpcpp/support/client_interceptor.h"
#include "grpcpp/version_info.h"

// The private parts below were read from gRPC 1.51's headers; another
// version compiles the public-API fallback (grpc_internals.h).
#if GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51
#define GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS 1
#else
#define GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS 0
#endif

#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
#include "grpc/grpc.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/call.h"
#include "grpcpp/impl/codegen/interceptor_common.h"

// gRPC core's answer to "what kind is this completion queue", exported by
// libgrpc (src/core/lib/surface/completion_queue.h) but not in its public
// headers.
grpc_cq_completion_type grpc_get_cq_completion_type(grpc_completion_queue* cq);

namespace resilience::internal {
namespace {

// Reads InterceptorBatchMethodsImpl::call_, which gRPC 1.51 keeps private:
// an explicit instantiation may name a private member, and the friend
// function it defines hands the member pointer out. A renamed member fails
// to compile, never silently.
struct BatchCall {
  using type = grpc::internal::Call* grpc::internal::InterceptorBatchMethodsImpl::*;
  friend type MemberOf(BatchCall);
};
template <typename Tag, typename Tag::type Member>
struct ExposeMember {
  friend typename Tag::type MemberOf(Tag) { return Member; }
};
template struct ExposeMember<BatchCall, &grpc::internal::InterceptorBatchMethodsImpl::call_>;

}  // namespace
}  // namespace resilience::internal
#endif  // GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS

namespace resilience::internal {

const char kAttemptSuffix[] = "";

bool UsesGrpcPrivateMembers() { return GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS != 0; }

bool InReadOnlyStaticStorage(const void* p) {
  struct Query {
    uintptr_t address;
    bool read_only = false;
  } query{reinterpret_cast<uintptr_t>(p)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t /*size*/, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_W) != 0) continue;
          const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (q->address >= start && q->address - start < segment.p_memsz) {
            q->read_only = true;
            return 1;  // stop walking
          }
        }
        return 0;
      },
      &query);
  return query.read_only;
}

bool CallerBlocks(grpc::experimental::InterceptorBatchMethods* methods) {
#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
  auto* batch = dynamic_cast<grpc::internal::InterceptorBatchMethodsImpl*>(methods);
  if (batch == nullptr) return false;
  grpc::internal::Call* call = batch->*MemberOf(BatchCall{});
  if (call == nullptr || call->cq() == nullptr) return false;
  return grpc_get_cq_completion_type(call->cq()->cq()) == GRPC_CQ_PLUCK;
#else
  (void)methods;
  return false;  // the public-API fallback: treat every caller as non-blocking
#endif
}

}  // namespace resilience::internal
