#include "src/client_interceptors/grpc_internals.h"

#include <link.h>

#include <cstdint>
#include <utility>

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
#include "grpcpp/impl/call_op_set.h"
#include "grpcpp/impl/codegen/interceptor_common.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"

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

// InterceptorBatchMethodsImpl::ops_: the batch's op set.
struct BatchOps {
  using type = grpc::internal::CallOpSetInterface* grpc::internal::InterceptorBatchMethodsImpl::*;
  friend type MemberOf(BatchOps);
};
template struct ExposeMember<BatchOps, &grpc::internal::InterceptorBatchMethodsImpl::ops_>;

// ClientAsyncResponseReader<ByteBuffer>::single_buf_: its one batch, of the
// type ClientAsyncResponseReaderHelper::SetupRequest() makes it.
using Reader = grpc::ClientAsyncResponseReader<grpc::ByteBuffer>;
struct ReaderBatch {
  using type = grpc::internal::CallOpSendInitialMetadata* Reader::*;
  friend type MemberOf(ReaderBatch);
};
template struct ExposeMember<ReaderBatch, &Reader::single_buf_>;
using ReaderBatchType =
    grpc::internal::CallOpSet<grpc::internal::CallOpSendInitialMetadata,
                              grpc::internal::CallOpSendMessage,
                              grpc::internal::CallOpClientSendClose,
                              grpc::internal::CallOpRecvInitialMetadata,
                              grpc::internal::CallOpRecvMessage<grpc::ByteBuffer>,
                              grpc::internal::CallOpClientRecvStatus>;

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

#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
namespace {

// The call's queue and whether its batch is its own core tag (an async or
// a blocking call's is; a callback call's hands core its callback tag,
// CallOpSet::set_core_cq_tag()); {null, false} when unknown.
std::pair<grpc::CompletionQueue*, bool> QueueAndOwnTag(
    grpc::experimental::InterceptorBatchMethods* methods) {
  auto* batch = dynamic_cast<grpc::internal::InterceptorBatchMethodsImpl*>(methods);
  if (batch == nullptr) return {nullptr, false};
  grpc::internal::Call* call = batch->*MemberOf(BatchCall{});
  grpc::internal::CallOpSetInterface* ops = batch->*MemberOf(BatchOps{});
  if (call == nullptr || call->cq() == nullptr || ops == nullptr) return {nullptr, false};
  return {call->cq(), ops->core_cq_tag() == dynamic_cast<void*>(ops)};
}

}  // namespace
#endif  // GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS

grpc::CompletionQueue* CallerQueue(grpc::experimental::InterceptorBatchMethods* methods) {
#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
  const auto [cq, own_tag] = QueueAndOwnTag(methods);
  if (cq == nullptr || !own_tag) return nullptr;
  return grpc_get_cq_completion_type(cq->cq()) == GRPC_CQ_NEXT ? cq : nullptr;
#else
  (void)methods;
  return nullptr;  // the public-API fallback
#endif
}

bool CallerUsesCallbacks(grpc::experimental::InterceptorBatchMethods* methods) {
#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
  const auto [cq, own_tag] = QueueAndOwnTag(methods);
  return cq != nullptr && !own_tag;
#else
  (void)methods;
  return false;  // the public-API fallback
#endif
}

bool AcceptFilledMessage(grpc::experimental::InterceptorBatchMethods* methods) {
#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
  using grpc::internal::CallOpSet;
  using Message = grpc::internal::CallOpRecvMessage<grpc::protobuf::MessageLite>;
  // The blocking (client_unary_call.h) and the callback (client_callback.h)
  // unary calls' one batch.
  using FullSet = CallOpSet<grpc::internal::CallOpSendInitialMetadata,
                            grpc::internal::CallOpSendMessage,
                            grpc::internal::CallOpRecvInitialMetadata, Message,
                            grpc::internal::CallOpClientSendClose,
                            grpc::internal::CallOpClientRecvStatus>;
  // An async stub's (async_unary_call.h): its single batch, or the Finish()
  // batch of a call started before.
  using AsyncSet = CallOpSet<grpc::internal::CallOpSendInitialMetadata,
                             grpc::internal::CallOpSendMessage,
                             grpc::internal::CallOpClientSendClose,
                             grpc::internal::CallOpRecvInitialMetadata, Message,
                             grpc::internal::CallOpClientRecvStatus>;
  using AsyncFinishSet = CallOpSet<Message, grpc::internal::CallOpClientRecvStatus>;
  auto* batch = dynamic_cast<grpc::internal::InterceptorBatchMethodsImpl*>(methods);
  if (batch == nullptr) return false;
  grpc::internal::CallOpSetInterface* ops = batch->*MemberOf(BatchOps{});
  if (auto* full = dynamic_cast<FullSet*>(ops); full != nullptr) {
    static_cast<Message*>(full)->got_message = true;
    return true;
  }
  return dynamic_cast<AsyncSet*>(ops) != nullptr || dynamic_cast<AsyncFinishSet*>(ops) != nullptr;
#else
  (void)methods;
  return false;  // the public-API fallback
#endif
}

bool SilentCompletion::Route(grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* reader) {
#if GRPC_RESILIENCE_GRPC_PRIVATE_MEMBERS
  auto* batch = static_cast<ReaderBatchType*>(reader->*MemberOf(ReaderBatch{}));
  batch->set_core_cq_tag(this);
  batch_ = batch;
  return true;
#else
  (void)reader;
  return false;
#endif
}

bool SilentCompletion::FinalizeResult(void** /*tag*/, bool* status) {
  void* ignored = nullptr;
  // False: the attempt's own (inner) interceptors run first; the batch then
  // comes back through this tag once more (ContinueFinalizeResultAfterInterception()).
  if (!batch_->FinalizeResult(&ignored, status)) return false;
  done_->Done(*status);  // may end the call: no use of `this` after it
  return false;
}

}  // namespace resilience::internal
