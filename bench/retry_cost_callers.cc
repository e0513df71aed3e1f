// retry_cost_bench's non-blocking callers: one Get as an application with an
// async stub or the callback API makes it (retry_cost_channels.h).

#include <condition_variable>
#include <memory>
#include <mutex>

#include "bench/retry_cost_channels.h"
#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"

namespace retry_cost {
namespace {

// The async caller's completion queue: one per caller thread, made on its
// first call and reused (as an application's polling thread would), shut down
// and drained when the thread ends.
grpc::CompletionQueue& CallerQueue() {
  struct Queue {
    grpc::CompletionQueue cq;
    ~Queue() {
      cq.Shutdown();
      void* tag;
      bool ok;
      while (cq.Next(&tag, &ok)) {
      }
    }
  };
  thread_local Queue queue;
  return queue.cq;
}

Outcome OutcomeOf(const grpc::Status& status, const grpc::ClientContext& context) {
  if (status.ok()) return Outcome::kOk;
  return resilience::RejectedLocally(context) ? Outcome::kRejectedLocally : Outcome::kFailed;
}

}  // namespace

Outcome AsyncGetOnce(Stub& stub, const std::string& key) {
  grpc::ClientContext context;
  context.set_deadline(CallDeadlineFromNow());
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  grpc::Status status;
  grpc::CompletionQueue& cq = CallerQueue();
  std::unique_ptr<grpc::ClientAsyncResponseReader<cache::v1::GetResp>> reader =
      stub.AsyncGet(&context, request, &cq);
  int done_tag = 0;
  reader->Finish(&response, &status, &done_tag);
  void* tag = nullptr;
  bool ok = false;
  // The only operation on this thread's queue: its tag is the next event.
  while (tag != &done_tag && cq.Next(&tag, &ok)) {
  }
  return OutcomeOf(status, context);
}

Outcome CallbackGetOnce(Stub& stub, const std::string& key) {
  grpc::ClientContext context;
  context.set_deadline(CallDeadlineFromNow());
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  grpc::Status status;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub.async()->Get(&context, &request, &response, [&](grpc::Status s) {
    // Notified under the lock: the waiter cannot return (and destroy `cv`)
    // before this callback has let go of both.
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return OutcomeOf(status, context);
}

}  // namespace retry_cost
