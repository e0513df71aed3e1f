// TestService on the sync and on the callback server API, counting how often
// the user's code of each method ran (and how many messages it read), so
// tests can prove that a rejected call never reaches it.

#ifndef GRPC_RESILIENCE_TESTS_SERVER_INTERCEPTORS_ECHO_SERVICES_H_
#define GRPC_RESILIENCE_TESTS_SERVER_INTERCEPTORS_ECHO_SERVICES_H_

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "client_interceptors/test_service.grpc.pb.h"
#include "tests/client_interceptors/all_call_types.h"

namespace resilience::testing {

struct HandlerRuns {
  std::array<std::atomic<int>, 4> runs{};
  std::atomic<int> messages_read{0};
  void Ran(CallType type) { runs[static_cast<int>(type)]++; }
  int of(CallType type) const { return runs[static_cast<int>(type)].load(); }
  int total() const {
    int sum = 0;
    for (CallType type : kAllCallTypes) sum += of(type);
    return sum;
  }
};

// Unary echoes; ClientStream reads everything and answers the count;
// ServerStream writes 3 messages; Bidi echoes each message.
class SyncEchoService final : public resilience::test::TestService::Service {
 public:
  explicit SyncEchoService(HandlerRuns* runs) : runs_(runs) {}
  grpc::Status Unary(grpc::ServerContext*, const resilience::test::Req* request,
                     resilience::test::Resp* response) override {
    runs_->Ran(CallType::kUnary);
    response->set_text(request->text());
    return grpc::Status::OK;
  }
  grpc::Status ClientStream(grpc::ServerContext*, grpc::ServerReader<resilience::test::Req>* reader,
                            resilience::test::Resp* response) override {
    runs_->Ran(CallType::kClientStream);
    resilience::test::Req request;
    int n = 0;
    while (reader->Read(&request)) {
      ++n;
      runs_->messages_read++;
    }
    response->set_text(std::to_string(n));
    return grpc::Status::OK;
  }
  grpc::Status ServerStream(grpc::ServerContext*, const resilience::test::Req* request,
                            grpc::ServerWriter<resilience::test::Resp>* writer) override {
    runs_->Ran(CallType::kServerStream);
    resilience::test::Resp response;
    response.set_text(request->text());
    for (int i = 0; i < 3; ++i) writer->Write(response);
    return grpc::Status::OK;
  }
  grpc::Status Bidi(grpc::ServerContext*,
                    grpc::ServerReaderWriter<resilience::test::Resp, resilience::test::Req>* stream)
      override {
    runs_->Ran(CallType::kBidi);
    resilience::test::Req request;
    resilience::test::Resp response;
    while (stream->Read(&request)) {
      runs_->messages_read++;
      response.set_text(request.text());
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

 private:
  HandlerRuns* const runs_;
};

// The same behaviour with reactors.
class CallbackEchoService final : public resilience::test::TestService::CallbackService {
 public:
  explicit CallbackEchoService(HandlerRuns* runs) : runs_(runs) {}

  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context,
                                  const resilience::test::Req* request,
                                  resilience::test::Resp* response) override {
    runs_->Ran(CallType::kUnary);
    response->set_text(request->text());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerReadReactor<resilience::test::Req>* ClientStream(
      grpc::CallbackServerContext*, resilience::test::Resp* response) override {
    runs_->Ran(CallType::kClientStream);
    class Reader final : public grpc::ServerReadReactor<resilience::test::Req> {
     public:
      Reader(HandlerRuns* runs, resilience::test::Resp* response)
          : runs_(runs), response_(response) {
        StartRead(&request_);
      }
      void OnReadDone(bool ok) override {
        if (!ok) {
          response_->set_text(std::to_string(n_));
          Finish(grpc::Status::OK);
          return;
        }
        ++n_;
        runs_->messages_read++;
        StartRead(&request_);
      }
      void OnDone() override { delete this; }

     private:
      HandlerRuns* const runs_;
      resilience::test::Resp* const response_;
      resilience::test::Req request_;
      int n_ = 0;
    };
    return new Reader(runs_, response);
  }

  grpc::ServerWriteReactor<resilience::test::Resp>* ServerStream(
      grpc::CallbackServerContext*, const resilience::test::Req* request) override {
    runs_->Ran(CallType::kServerStream);
    class Writer final : public grpc::ServerWriteReactor<resilience::test::Resp> {
     public:
      explicit Writer(const std::string& text) {
        response_.set_text(text);
        StartWrite(&response_);
      }
      void OnWriteDone(bool ok) override {
        if (!ok || ++written_ == 3) {
          Finish(grpc::Status::OK);
          return;
        }
        StartWrite(&response_);
      }
      void OnDone() override { delete this; }

     private:
      resilience::test::Resp response_;
      int written_ = 0;
    };
    return new Writer(request->text());
  }

  grpc::ServerBidiReactor<resilience::test::Req, resilience::test::Resp>* Bidi(
      grpc::CallbackServerContext*) override {
    runs_->Ran(CallType::kBidi);
    class Echo final : public grpc::ServerBidiReactor<resilience::test::Req, resilience::test::Resp> {
     public:
      explicit Echo(HandlerRuns* runs) : runs_(runs) { StartRead(&request_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        runs_->messages_read++;
        response_.set_text(request_.text());
        StartWrite(&response_);
      }
      void OnWriteDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        StartRead(&request_);
      }
      void OnDone() override { delete this; }

     private:
      HandlerRuns* const runs_;
      resilience::test::Req request_;
      resilience::test::Resp response_;
    };
    return new Echo(runs_);
  }

 private:
  HandlerRuns* const runs_;
};

// The echo service of one server API: CallbackEchoService when
// `callback_api`, else SyncEchoService, counting into `runs`.
class EchoService {
 public:
  EchoService(bool callback_api, HandlerRuns* runs) {
    if (callback_api) {
      callback_ = std::make_unique<CallbackEchoService>(runs);
    } else {
      sync_ = std::make_unique<SyncEchoService>(runs);
    }
  }
  grpc::Service* get() {
    return callback_ != nullptr ? static_cast<grpc::Service*>(callback_.get()) : sync_.get();
  }

 private:
  std::unique_ptr<SyncEchoService> sync_;
  std::unique_ptr<CallbackEchoService> callback_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_SERVER_INTERCEPTORS_ECHO_SERVICES_H_
