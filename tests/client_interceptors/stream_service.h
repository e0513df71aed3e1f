// A TestService whose stream handlers follow a Script (fail before or after
// their first response), counting their runs per method; and MustParse(),
// shared by streaming_retry_test.cc and wait_for_ready_test.cc.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_STREAM_SERVICE_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_STREAM_SERVICE_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "gtest/gtest.h"
#include "src/core/mutex.h"
#include "grpc_resilience/policy.h"

namespace resilience::testing {

using resilience::test::Req;
using resilience::test::Resp;

// What the next handler runs do.
enum class Script {
  kOk,
  // Fail UNAVAILABLE before any response: nothing sent, so gRPC may retry.
  kFailFirst,
  // Fail UNAVAILABLE after a response: server-streaming and bidi write a
  // message first, client-streaming (one response, sent only with OK) sends
  // its headers. Either commits the call in gRPC: no retry.
  kFailAfterResponse,
};

class StreamService final : public resilience::test::TestService::Service {
 public:
  // The next `n` handler runs (of any method) follow `script`; later ones
  // succeed.
  void Next(int n, Script script) {
    MutexLock lock(&mu_);
    next_ = n;
    script_ = script;
  }
  int Runs(const std::string& method) {
    MutexLock lock(&mu_);
    return runs_[method];
  }

  grpc::Status Unary(grpc::ServerContext*, const Req* request, Resp* response) override {
    if (Take("Unary") != Script::kOk) return Unavailable();
    response->set_text("echo:" + request->text());
    return grpc::Status::OK;
  }
  grpc::Status ClientStream(grpc::ServerContext*, grpc::ServerReader<Req>* reader,
                            Resp* response) override {
    const Script script = Take("ClientStream");
    Req request;
    int n = 0;
    while (reader->Read(&request)) ++n;
    if (script == Script::kFailAfterResponse) reader->SendInitialMetadata();
    if (script != Script::kOk) return Unavailable();
    response->set_text(absl::StrCat("read ", n));
    return grpc::Status::OK;
  }
  grpc::Status ServerStream(grpc::ServerContext*, const Req* request,
                            grpc::ServerWriter<Resp>* writer) override {
    const Script script = Take("ServerStream");
    if (script == Script::kFailFirst) return Unavailable();
    Resp response;
    for (int i = 0; i < 3; ++i) {
      response.set_text(request->text() + std::to_string(i));
      writer->Write(response);
      if (script == Script::kFailAfterResponse) return Unavailable();
    }
    return grpc::Status::OK;
  }
  grpc::Status Bidi(grpc::ServerContext*,
                    grpc::ServerReaderWriter<Resp, Req>* stream) override {
    const Script script = Take("Bidi");
    if (script == Script::kFailFirst) return Unavailable();
    Req request;
    Resp response;
    while (stream->Read(&request)) {
      response.set_text("echo:" + request.text());
      stream->Write(response);
      if (script == Script::kFailAfterResponse) return Unavailable();
    }
    return grpc::Status::OK;
  }

 private:
  static grpc::Status Unavailable() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted failure");
  }
  Script Take(const std::string& method) {
    MutexLock lock(&mu_);
    ++runs_[method];
    if (next_ == 0) return Script::kOk;
    --next_;
    return script_;
  }

  Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  Script script_ ABSL_GUARDED_BY(mu_) = Script::kOk;
  std::map<std::string, int> runs_ ABSL_GUARDED_BY(mu_);
};

inline PolicySet MustParse(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_STREAM_SERVICE_H_
