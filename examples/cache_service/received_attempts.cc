#include "examples/cache_service/received_attempts.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "grpcpp/server_context.h"
#include "grpc_resilience/prometheus_text.h"

namespace cache_service {
namespace {

// Counts the call when gRPC asks for its interceptor; makes none.
class CountingFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingFactory(ReceivedAttempts* counts) : counts_(counts) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const char* method = info->method();
    counts_->Count(method == nullptr ? "" : method,
                   ReceivedAttempts::IsRetry(info->server_context()->client_metadata()));
    return nullptr;
  }

 private:
  ReceivedAttempts* const counts_;
};

}  // namespace

void ReceivedAttempts::Count(absl::string_view method, bool retry) {
  example_sync::MutexLock lock(&mu_);
  auto it = counts_.find(method);
  if (it == counts_.end()) {
    if (counts_.size() >= kMaxMethods) method = "other";
    it = counts_.try_emplace(std::string(method)).first;
  }
  ++it->second.attempts;
  if (retry) ++it->second.retries;
}

std::map<std::string, ReceivedAttempts::Counts> ReceivedAttempts::Snapshot() const {
  example_sync::MutexLock lock(&mu_);
  return {counts_.begin(), counts_.end()};
}

std::string ReceivedAttempts::Render() const {
  resilience::PrometheusText text;
  for (const auto& [method, counts] : Snapshot()) {
    const resilience::MetricLabel label[] = {{"grpc_method", method}};
    text.Counter("cache_server_attempts_received_total",
                 "Calls this server received (each attempt of a retried call is one).")
        .Sample(label, counts.attempts);
    text.Counter("cache_server_retries_received_total",
                 "Of the calls received, those whose grpc-previous-rpc-attempts (or "
                 "x-retry-attempt) was above 0: retries and hedges.")
        .Sample(label, counts.retries);
  }
  return text.Finish();
}

bool ReceivedAttempts::IsRetry(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  // gRPC's own retries send grpc-previous-rpc-attempts (gRFC A6), the
  // library's client both it and x-retry-attempt.
  for (const char* key : {"grpc-previous-rpc-attempts", "x-retry-attempt"}) {
    const auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    int64_t earlier = 0;
    return absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &earlier) &&
           earlier > 0;
  }
  return false;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
ReceivedAttempts::Factory() {
  return std::make_unique<CountingFactory>(this);
}

}  // namespace cache_service
