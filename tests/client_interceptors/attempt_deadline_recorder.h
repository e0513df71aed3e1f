// An inner client interceptor that records the deadline each attempt of a
// RetriedUnaryCall carries, exactly as the chain set it on the attempt's
// ClientContext (the chain's Clock scale), for tests on simulated time.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ATTEMPT_DEADLINE_RECORDER_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ATTEMPT_DEADLINE_RECORDER_H_

#include <chrono>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/core/mutex.h"

namespace resilience::testing {

// AttemptDeadlineRecorder
//
// Placed after the ResilientCallFactory, it sees the initial metadata of
// the attempts only (the application's call is hijacked before it). An
// attempt without a deadline is recorded as absl::InfiniteFuture().
// Thread-safe; must outlive the channel's calls.
class AttemptDeadlineRecorder final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new Recorder(this, info);
  }

  // The deadlines of the attempts seen so far, in the order they were
  // sent, once there are at least `n` (waits up to 10 s of real time; fewer
  // when it gave up).
  std::vector<absl::Time> Await(size_t n) ABSL_LOCKS_EXCLUDED(mu_) {
    const absl::Time until = absl::Now() + absl::Seconds(10);
    MutexLock lock(&mu_);
    while (deadlines_.size() < n && absl::Now() < until) {
      added_.WaitWithTimeout(&mu_, until - absl::Now());
    }
    return deadlines_;
  }

  void Clear() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    deadlines_.clear();
  }

 private:
  class Recorder final : public grpc::experimental::Interceptor {
   public:
    Recorder(AttemptDeadlineRecorder* owner, grpc::experimental::ClientRpcInfo* info)
        : owner_(owner), info_(info) {}
    void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
      if (methods->QueryInterceptionHookPoint(
              grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
        const auto deadline = info_->client_context()->deadline();
        owner_->Add(deadline == std::chrono::system_clock::time_point::max()
                        ? absl::InfiniteFuture()
                        : absl::FromChrono(deadline));
      }
      methods->Proceed();
    }

   private:
    AttemptDeadlineRecorder* const owner_;
    grpc::experimental::ClientRpcInfo* const info_;
  };

  void Add(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    deadlines_.push_back(deadline);
    added_.SignalAll();
  }

  Mutex mu_;
  CondVar added_;
  std::vector<absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_ATTEMPT_DEADLINE_RECORDER_H_
