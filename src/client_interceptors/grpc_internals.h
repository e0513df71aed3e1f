// File: src/client_interceptors/grpc_internals.h
//
// The one adapter between the client chain and what gRPC does not offer
// publicly: which kind of stub made a call, as far as an interceptor can
// tell (a protobuf generated one or not, blocking or not), and how the
// chain marks the attempts it issues. Everything in the library that
// depends on gRPC 1.51's private members or unexported symbols is in
// grpc_internals.cc, behind a compile-time check of the gRPC version
// (GRPC_CPP_VERSION_MAJOR/MINOR, grpcpp/version_info.h): on another version
// it compiles the fallback, which uses public API only (see CallerBlocks()).
//
// The retry interceptor hijacks a unary call and, once an attempt
// succeeded, parses the response into the caller's receive buffer. gRPC 1.51
// hands interceptors that buffer as a void*; protobuf's generated stubs
// instantiate their receive op with protobuf::MessageLite, while a
// GenericStub receives into a grpc::ByteBuffer (and a TemplatedGenericStub or
// another code generator into whatever type it likes). Parsing into the wrong
// type is memory corruption, so the retry interceptor only takes calls that
// are known to come from a generated protobuf stub, and passes every other
// call through untouched. See docs/client-semantics.md.
//
// How a generated stub is recognised: (1) the method is in protobuf's
// generated descriptor pool (MethodCatalog::Linked()), and (2) the
// method name the call carries lives in read-only static storage: generated
// stubs name their methods with string literals, while GenericStub takes a
// std::string, whose characters are always on the heap, the stack or in
// writable data.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_GRPC_INTERNALS_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_GRPC_INTERNALS_H_

#include "absl/strings/string_view.h"
#include "grpcpp/impl/codegen/completion_queue_tag.h"
#include "src/client_interceptors/attempt_completion_queue.h"

namespace grpc {
class ByteBuffer;
class CompletionQueue;
template <class R>
class ClientAsyncResponseReader;
namespace experimental {
class InterceptorBatchMethods;
}  // namespace experimental
}  // namespace grpc

namespace resilience::internal {

// CallerBlocks()
//
// Whether the unary call whose first batch `methods` is was made by a
// blocking (sync) stub, whose thread waits for the result anyway: then the
// retry interceptor runs the attempts on that thread instead of handing them
// to another one. Only for the batch at the call's first
// PRE_SEND_INITIAL_METADATA.
//
// How: a blocking unary call waits on a completion queue of its own of the
// PLUCK kind, which no other unary call uses (async stubs complete on the
// application's NEXT queues, callbacks on the CALLBACK one). gRPC 1.51 shows
// an interceptor neither the call nor its queue, so the call is read from
// the batch object and the queue's kind asked from gRPC core (grpc_internals.cc);
// when the batch is not gRPC's own implementation the answer is false, the
// safe one.
bool CallerBlocks(grpc::experimental::InterceptorBatchMethods* methods);

// CallerQueue()
//
// The completion queue an async stub's unary call completes on, polled by
// the application's own thread; null when the call was not made by an async
// stub (a blocking or a callback one: gRPC 1.51 runs a callback call's
// completion on a queue of its own threads, whose tags are not
// CompletionQueueTags), or when this build uses the public-API fallback.
// Only for the batch at the call's first PRE_SEND_INITIAL_METADATA.
//
// How: the call's queue is of the NEXT kind, and its batch delivers its own
// completion (a callback call's batch hands core a callback tag instead).
grpc::CompletionQueue* CallerQueue(grpc::experimental::InterceptorBatchMethods* methods);

// CallerUsesCallbacks()
//
// Whether the unary call was made with the callback API (stub->async()):
// its batch hands core a callback tag instead of itself. Then gRPC runs
// its completion on the threads that run callbacks, where attempts made
// with the callback API complete too. False on the public-API fallback.
// Only for the batch at the call's first PRE_SEND_INITIAL_METADATA.
bool CallerUsesCallbacks(grpc::experimental::InterceptorBatchMethods* methods);

// SilentCompletion
//
// Lets an attempt complete on the application's own queue (CallerQueue())
// without its Next() ever returning it: Route() makes the attempt's batch
// hand the queue this tag instead of its own; the queue then calls
// FinalizeResult(), which finishes the batch (the attempt's status and
// response are written) and, once the attempt's own interceptors are done,
// calls `done`->Done() on the polling thread, and returns false: gRPC's C++ queue
// drops an event whose FinalizeResult() says false ("events that are
// observed at core but not requested by the user application",
// grpcpp/impl/codegen/completion_queue_tag.h), and polls on.
class SilentCompletion final : public grpc::internal::CompletionQueueTag {
 public:
  explicit SilentCompletion(AttemptCompletionQueue::Tag* done) : done_(done) {}

  // Before `reader`'s Finish() (whose tag is then never seen). False when
  // this build cannot (the public-API fallback): then use another queue.
  bool Route(grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* reader);

  bool FinalizeResult(void** tag, bool* status) override;

 private:
  AttemptCompletionQueue::Tag* const done_;
  grpc::internal::CompletionQueueTag* batch_ = nullptr;  // the attempt's own
};

// AcceptFilledMessage()
//
// At POST_RECV_STATUS of a generated stub's unary call that went out (not
// hijacked) and received no message: makes the caller take the message an
// interceptor wrote into the receive buffer (a fallback's answer). A
// blocking stub turns an OK status without a received message into
// UNIMPLEMENTED "No message returned for unary request"; gRPC 1.51 keeps the
// flag it reads (CallOpRecvMessage::got_message) in the batch's op set,
// which an interceptor reaches only through InterceptorBatchMethodsImpl's
// private ops_. Async and callback stubs accept a missing message
// (AllowNoMessage()) and read their buffer as it is. False when the batch
// is none of the generated unary stubs' op sets, and always in the
// public-API fallback: then an OK answer cannot be given.
bool AcceptFilledMessage(grpc::experimental::InterceptorBatchMethods* methods);

// InReadOnlyStaticStorage()
//
// Whether `p` points into a read-only segment of the executable or of a
// loaded shared library. Walks the loaded objects: call it once per name
// and remember the answer.
bool InReadOnlyStaticStorage(const void* p);

// kAttemptSuffix
//
// The `suffix_for_stats` (grpc::internal::RpcMethod, public in
// ClientRpcInfo::suffix_for_stats()) of every attempt the chain issues: an
// empty string at an address of ours. gRPC 1.51 mis-indexes
// GetInterceptedChannel() when a factory before ours returned nullptr, and
// then hands our own attempt to our factory again; the factory knows it by
// this address (one pointer compare, no thread-local) and stays out.
extern const char kAttemptSuffix[];

// Whether this build reads gRPC's private members (gRPC 1.51), or uses the
// public-API fallback.
bool UsesGrpcPrivateMembers();

}  // namespace resilience::internal

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_GRPC_INTERNALS_H_
