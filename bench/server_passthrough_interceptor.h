// The floor of any server interceptor on gRPC 1.51: one that calls
// Proceed() at every hook (but the cancel hook, which wants none) and does
// nothing else. gRPC still makes it for each call and runs the interception
// machinery for each batch, which is what having any server interceptor at
// all costs. Given trailers, it adds them to every answer at
// PRE_SEND_STATUS: what gRPC charges for carrying them (the load report's).
// A benchmark baseline, not a library piece.

#ifndef GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_

#include <string>
#include <utility>
#include <vector>

#include "grpcpp/support/server_interceptor.h"

namespace resilience::bench {

class ServerPassthroughInterceptor final : public grpc::experimental::Interceptor {
 public:
  using Trailers = std::vector<std::pair<std::string, std::string>>;

  // What the server is built with: a new interceptor per call.
  class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    Factory() = default;
    explicit Factory(Trailers trailers) : trailers_(std::move(trailers)) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo* /*info*/) override {
      return new ServerPassthroughInterceptor(&trailers_);
    }

   private:
    const Trailers trailers_;
  };

  explicit ServerPassthroughInterceptor(const Trailers* trailers) : trailers_(trailers) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_CANCEL)) {
      return;
    }
    if (!trailers_->empty() &&
        methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      for (const auto& [key, value] : *trailers_) {
        methods->GetSendTrailingMetadata()->emplace(key, value);
      }
    }
    methods->Proceed();
  }

 private:
  const Trailers* const trailers_;  // the factory's
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_
