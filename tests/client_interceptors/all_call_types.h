// One call of each type (unary, client-, server-streaming, bidi) with each
// stub flavour (sync, async completion queue, callback), for tests that
// must hold for all twelve. Each returns the call's final status and the
// trailing metadata; every wait is bounded.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ALL_CALL_TYPES_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ALL_CALL_TYPES_H_

#include <map>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpcpp/completion_queue.h"
#include "gtest/gtest.h"

namespace resilience::testing {

enum class CallType { kUnary, kClientStream, kServerStream, kBidi };
inline constexpr CallType kAllCallTypes[] = {CallType::kUnary, CallType::kClientStream,
                                             CallType::kServerStream, CallType::kBidi};
enum class Flavour { kSync, kAsync, kCallback };

struct CallResult {
  grpc::Status status;
  std::multimap<std::string, std::string> trailers;
  int messages_received = 0;
  bool write_failed = false;  // a Write() returned false
};

inline const char* Name(CallType t) {
  switch (t) {
    case CallType::kUnary: return "unary";
    case CallType::kClientStream: return "client-streaming";
    case CallType::kServerStream: return "server-streaming";
    case CallType::kBidi: return "bidi";
  }
  return "?";
}
inline const char* Name(Flavour f) {
  switch (f) {
    case Flavour::kSync: return "sync";
    case Flavour::kAsync: return "async";
    case Flavour::kCallback: return "callback";
  }
  return "?";
}

namespace internal_calls {

using resilience::test::Req;
using resilience::test::Resp;
using Stub = resilience::test::TestService::Stub;

inline void CopyTrailers(grpc::ClientContext& context, CallResult& r) {
  for (const auto& [k, v] : context.GetServerTrailingMetadata()) {
    r.trailers.emplace(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
  }
}

// Streaming calls send `uploads` messages (stopping at the first failed
// write); every request carries `text`.
inline CallResult Sync(Stub& stub, CallType type, const std::string& text = "x",
                       int uploads = 1) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  CallResult r;
  Req req;
  req.set_text(text);
  Resp resp;
  switch (type) {
    case CallType::kUnary:
      r.status = stub.Unary(&context, req, &resp);
      break;
    case CallType::kClientStream: {
      auto writer = stub.ClientStream(&context, &resp);
      for (int i = 0; i < uploads && !r.write_failed; ++i) r.write_failed = !writer->Write(req);
      writer->WritesDone();
      r.status = writer->Finish();
      break;
    }
    case CallType::kServerStream: {
      auto reader = stub.ServerStream(&context, req);
      while (reader->Read(&resp)) ++r.messages_received;
      r.status = reader->Finish();
      break;
    }
    case CallType::kBidi: {
      auto stream = stub.Bidi(&context);
      for (int i = 0; i < uploads && !r.write_failed; ++i) r.write_failed = !stream->Write(req);
      stream->WritesDone();
      while (stream->Read(&resp)) ++r.messages_received;
      r.status = stream->Finish();
      break;
    }
  }
  CopyTrailers(context, r);
  return r;
}

// Waits for `tag` on `cq`; returns the ok bit (false on time-out too).
inline bool Await(grpc::CompletionQueue& cq, intptr_t tag) {
  void* got = nullptr;
  bool ok = false;
  while (true) {
    const auto status =
        cq.AsyncNext(&got, &ok, absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    if (status != grpc::CompletionQueue::GOT_EVENT) return false;
    if (reinterpret_cast<intptr_t>(got) == tag) return ok;
  }
}

inline CallResult Async(Stub& stub, CallType type) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::CompletionQueue cq;
  CallResult r;
  Req req;
  req.set_text("x");
  Resp resp;
  auto tag = [](int n) { return reinterpret_cast<void*>(static_cast<intptr_t>(n)); };
  switch (type) {
    case CallType::kUnary: {
      auto rpc = stub.AsyncUnary(&context, req, &cq);
      rpc->Finish(&resp, &r.status, tag(1));
      Await(cq, 1);
      break;
    }
    case CallType::kClientStream: {
      auto writer = stub.AsyncClientStream(&context, &resp, &cq, tag(1));
      Await(cq, 1);
      writer->Write(req, tag(2));
      r.write_failed = !Await(cq, 2);
      writer->WritesDone(tag(3));
      Await(cq, 3);
      writer->Finish(&r.status, tag(4));
      Await(cq, 4);
      break;
    }
    case CallType::kServerStream: {
      auto reader = stub.AsyncServerStream(&context, req, &cq, tag(1));
      Await(cq, 1);
      for (int i = 0; i < 100; ++i) {
        reader->Read(&resp, tag(2));
        if (!Await(cq, 2)) break;
        ++r.messages_received;
      }
      reader->Finish(&r.status, tag(3));
      Await(cq, 3);
      break;
    }
    case CallType::kBidi: {
      auto stream = stub.AsyncBidi(&context, &cq, tag(1));
      Await(cq, 1);
      stream->Write(req, tag(2));
      r.write_failed = !Await(cq, 2);
      stream->WritesDone(tag(3));
      Await(cq, 3);
      for (int i = 0; i < 100; ++i) {
        stream->Read(&resp, tag(4));
        if (!Await(cq, 4)) break;
        ++r.messages_received;
      }
      stream->Finish(&r.status, tag(5));
      Await(cq, 5);
      break;
    }
  }
  cq.Shutdown();
  void* ignored;
  bool ignored_ok;
  while (cq.Next(&ignored, &ignored_ok)) {
  }
  CopyTrailers(context, r);
  return r;
}

class Writer final : public grpc::ClientWriteReactor<Req> {
 public:
  void Go(Stub& stub, grpc::ClientContext* context, Resp* resp) {
    req_.set_text("x");
    stub.async()->ClientStream(context, resp, this);
    StartWrite(&req_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    write_failed = !ok;
    StartWritesDone();
  }
  void OnDone(const grpc::Status& s) override {
    status = s;
    done.Notify();
  }
  Req req_;
  bool write_failed = false;
  grpc::Status status;
  absl::Notification done;
};

class Reader final : public grpc::ClientReadReactor<Resp> {
 public:
  void Go(Stub& stub, grpc::ClientContext* context, const Req* req) {
    stub.async()->ServerStream(context, req, this);
    StartRead(&resp_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++received;
    StartRead(&resp_);
  }
  void OnDone(const grpc::Status& s) override {
    status = s;
    done.Notify();
  }
  Resp resp_;
  int received = 0;
  grpc::Status status;
  absl::Notification done;
};

class BidiReactor final : public grpc::ClientBidiReactor<Req, Resp> {
 public:
  void Go(Stub& stub, grpc::ClientContext* context) {
    req_.set_text("x");
    stub.async()->Bidi(context, this);
    StartWrite(&req_);
    StartRead(&resp_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    write_failed = !ok;
    StartWritesDone();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++received;
    StartRead(&resp_);
  }
  void OnDone(const grpc::Status& s) override {
    status = s;
    done.Notify();
  }
  Req req_;
  Resp resp_;
  int received = 0;
  bool write_failed = false;
  grpc::Status status;
  absl::Notification done;
};

inline CallResult Callback(Stub& stub, CallType type) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  CallResult r;
  Req req;
  req.set_text("x");
  Resp resp;
  const absl::Duration limit = absl::Seconds(15);
  switch (type) {
    case CallType::kUnary: {
      absl::Notification done;
      stub.async()->Unary(&context, &req, &resp, [&](grpc::Status s) {
        r.status = std::move(s);
        done.Notify();
      });
      done.WaitForNotificationWithTimeout(limit);
      break;
    }
    case CallType::kClientStream: {
      Writer w;
      w.Go(stub, &context, &resp);
      w.done.WaitForNotificationWithTimeout(limit);
      r.status = w.status;
      r.write_failed = w.write_failed;
      break;
    }
    case CallType::kServerStream: {
      Reader rd;
      rd.Go(stub, &context, &req);
      rd.done.WaitForNotificationWithTimeout(limit);
      r.status = rd.status;
      r.messages_received = rd.received;
      break;
    }
    case CallType::kBidi: {
      BidiReactor b;
      b.Go(stub, &context);
      b.done.WaitForNotificationWithTimeout(limit);
      r.status = b.status;
      r.messages_received = b.received;
      r.write_failed = b.write_failed;
      break;
    }
  }
  CopyTrailers(context, r);
  return r;
}

}  // namespace internal_calls

inline CallResult MakeCall(resilience::test::TestService::Stub& stub, CallType type,
                           Flavour flavour) {
  switch (flavour) {
    case Flavour::kSync: return internal_calls::Sync(stub, type);
    case Flavour::kAsync: return internal_calls::Async(stub, type);
    case Flavour::kCallback: return internal_calls::Callback(stub, type);
  }
  return {};
}

// One unary call of `flavour` with `context`; waits at most 20 s.
inline grpc::Status UnaryCall(resilience::test::TestService::Stub& stub, Flavour flavour,
                       grpc::ClientContext* context) {
  resilience::test::Req request;
  request.set_text("hi");
  resilience::test::Resp response;
  switch (flavour) {
    case Flavour::kSync:
      return stub.Unary(context, request, &response);
    case Flavour::kAsync: {
      grpc::CompletionQueue cq;
      grpc::Status status;
      auto rpc = stub.AsyncUnary(context, request, &cq);
      rpc->Finish(&response, &status, reinterpret_cast<void*>(1));
      void* tag;
      bool ok;
      EXPECT_EQ(cq.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + absl::Seconds(20))),
                grpc::CompletionQueue::GOT_EVENT);
      cq.Shutdown();
      while (cq.Next(&tag, &ok)) {
      }
      return status;
    }
    case Flavour::kCallback: {
      grpc::Status status;
      absl::Notification done;
      stub.async()->Unary(context, &request, &response, [&](grpc::Status s) {
        status = std::move(s);
        done.Notify();
      });
      EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
      return status;
    }
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, "unknown flavour");
}

inline constexpr Flavour kFlavours[] = {Flavour::kSync, Flavour::kAsync, Flavour::kCallback};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ALL_CALL_TYPES_H_
