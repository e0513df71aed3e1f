// A TestService whose behaviour the test scripts: fail the next N attempts
// with a code (and a pushback trailer), be slow for the next N attempts, and
// log what each attempt carried.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SCRIPTED_SERVICE_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SCRIPTED_SERVICE_H_

#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "src/core/mutex.h"

namespace resilience::testing {

struct AttemptRecord {
  absl::Time at;
  std::string method;
  std::string retry_attempt;  // x-retry-attempt, "" when absent
  std::string custom;         // x-custom, "" when absent
};

class ScriptedService final : public resilience::test::TestService::Service {
 public:
  // The next `n` handler runs fail with `code` (and a pushback trailer when
  // `pushback` is not empty).
  void FailNext(int n, grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE,
                std::string pushback = "") {
    MutexLock lock(&mu_);
    fail_next_ = n;
    fail_code_ = code;
    pushback_ = std::move(pushback);
  }
  // The next `n` handler runs take `delay` (or until the call is cancelled).
  void SlowNext(int n, absl::Duration delay) {
    MutexLock lock(&mu_);
    slow_next_ = n;
    slow_delay_ = delay;
  }
  // Failures also carry the trailer `key: value` (e.g. to impersonate a
  // client-side trailer).
  void SetFailureTrailer(std::string key, std::string value) {
    MutexLock lock(&mu_);
    failure_trailer_ = {std::move(key), std::move(value)};
  }
  // The next `n` ServerStream calls pause for `pause` after their first
  // message (a healthy, long-lived stream).
  void PauseStreamsNext(int n, absl::Duration pause) {
    MutexLock lock(&mu_);
    pause_next_ = n;
    pause_ = pause;
  }
  // Attempts whose x-retry-attempt is `attempt` ("" for a call's first)
  // take `delay` (or until cancelled) and then end with `code`, whatever
  // FailNext()/SlowNext() say.
  void ScriptAttempt(std::string attempt, absl::Duration delay,
                     grpc::StatusCode code = grpc::StatusCode::OK) {
    MutexLock lock(&mu_);
    by_attempt_[std::move(attempt)] = {delay, code};
  }
  // Handler runs that saw their call cancelled while they waited, and
  // handler runs that have returned.
  int cancelled_seen() { return cancelled_seen_.load(); }
  int finished() { return finished_.load(); }

  std::vector<AttemptRecord> Log() {
    MutexLock lock(&mu_);
    return log_;
  }
  int handled() { return handled_.load(); }

  grpc::Status Unary(grpc::ServerContext* context, const resilience::test::Req* request,
                     resilience::test::Resp* response) override {
    grpc::Status s = Handle(context, "Unary");
    if (s.ok()) response->set_text("echo:" + request->text());
    return s;
  }
  grpc::Status ClientStream(grpc::ServerContext* context,
                            grpc::ServerReader<resilience::test::Req>* reader,
                            resilience::test::Resp* response) override {
    resilience::test::Req request;
    int n = 0;
    while (reader->Read(&request)) ++n;
    grpc::Status s = Handle(context, "ClientStream");
    if (s.ok()) response->set_text("read " + std::to_string(n));
    return s;
  }
  grpc::Status ServerStream(grpc::ServerContext* context, const resilience::test::Req* request,
                            grpc::ServerWriter<resilience::test::Resp>* writer) override {
    grpc::Status s = Handle(context, "ServerStream");
    if (!s.ok()) return s;
    absl::Duration pause = absl::ZeroDuration();
    {
      MutexLock lock(&mu_);
      if (pause_next_ > 0) {
        --pause_next_;
        pause = pause_;
      }
    }
    resilience::test::Resp response;
    for (int i = 0; i < 3; ++i) {
      response.set_text(request->text() + std::to_string(i));
      writer->Write(response);
      if (i == 0) Wait(context, pause);
    }
    return grpc::Status::OK;
  }
  grpc::Status Bidi(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<resilience::test::Resp, resilience::test::Req>* stream)
      override {
    grpc::Status s = Handle(context, "Bidi");
    if (!s.ok()) return s;
    resilience::test::Req request;
    resilience::test::Resp response;
    while (stream->Read(&request)) {
      response.set_text("echo:" + request.text());
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

 private:
  static std::string Metadata(grpc::ServerContext* context, const char* key) {
    auto it = context->client_metadata().find(key);
    return it == context->client_metadata().end() ? ""
                                                  : std::string(it->second.data(), it->second.size());
  }

  // Sleeps `delay`, or until the call is cancelled.
  void Wait(grpc::ServerContext* context, absl::Duration delay) {
    const absl::Time end = absl::Now() + delay;
    while (absl::Now() < end && !context->IsCancelled()) absl::SleepFor(absl::Milliseconds(2));
    if (context->IsCancelled()) cancelled_seen_++;
  }

  grpc::Status Handle(grpc::ServerContext* context, const char* method) {
    handled_++;
    grpc::Status s = HandleScripted(context, method);
    finished_++;
    return s;
  }

  grpc::Status HandleScripted(grpc::ServerContext* context, const char* method) {
    bool fail = false, slow = false;
    grpc::StatusCode code = grpc::StatusCode::OK;
    std::string pushback;
    std::pair<std::string, std::string> trailer;
    absl::Duration delay;
    {
      MutexLock lock(&mu_);
      trailer = failure_trailer_;
      log_.push_back({absl::Now(), method, Metadata(context, "x-retry-attempt"),
                      Metadata(context, "x-custom")});
      if (auto it = by_attempt_.find(log_.back().retry_attempt); it != by_attempt_.end()) {
        slow = true;
        delay = it->second.first;
        fail = it->second.second != grpc::StatusCode::OK;
        code = it->second.second;
      } else {
        if (slow_next_ > 0) {
          --slow_next_;
          slow = true;
          delay = slow_delay_;
        }
        if (fail_next_ > 0) {
          --fail_next_;
          fail = true;
          code = fail_code_;
          pushback = pushback_;
        }
      }
    }
    if (slow) Wait(context, delay);
    if (fail) {
      if (!pushback.empty()) context->AddTrailingMetadata("grpc-retry-pushback-ms", pushback);
      if (!trailer.first.empty()) context->AddTrailingMetadata(trailer.first, trailer.second);
      return grpc::Status(code, "scripted failure");
    }
    return grpc::Status::OK;
  }

  Mutex mu_;
  int fail_next_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::StatusCode fail_code_ ABSL_GUARDED_BY(mu_) = grpc::StatusCode::UNAVAILABLE;
  std::string pushback_ ABSL_GUARDED_BY(mu_);
  int slow_next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration slow_delay_ ABSL_GUARDED_BY(mu_);
  std::pair<std::string, std::string> failure_trailer_ ABSL_GUARDED_BY(mu_);
  int pause_next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration pause_ ABSL_GUARDED_BY(mu_);
  std::vector<AttemptRecord> log_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::pair<absl::Duration, grpc::StatusCode>> by_attempt_
      ABSL_GUARDED_BY(mu_);
  std::atomic<int> handled_{0};
  std::atomic<int> cancelled_seen_{0};
  std::atomic<int> finished_{0};
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_SCRIPTED_SERVICE_H_
