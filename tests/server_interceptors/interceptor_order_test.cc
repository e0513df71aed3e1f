// Where the application's own server interceptors sit
// (ServerResilienceOptions::outer_interceptors / inner_interceptors): an
// outer one sees every call before our throttle and fault injection decide,
// and the status the client gets; an inner one sees the call after they
// decided, and the status before ours rewrite it. Over real channels to an
// in-process server, sync and callback APIs.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/core/mutex.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::grpc::experimental::InterceptionHookPoints;
using ::resilience::testing::Eventually;
using ::resilience::testing::kGet;
using ::resilience::testing::kLong;
using ::resilience::testing::kStore;
using ::resilience::testing::ServerInterceptorsTest;

// What one interceptor saw of one call.
struct Seen {
  std::string method;
  // The calls of the method our interceptors had decided on (admitted,
  // rejected, aborted) when this interceptor saw the call arrive.
  int64_t decided_before = -1;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  bool pushback = false;
};

struct Recorder {
  // The server's resilience, set once AddServerInterceptors() returned.
  std::shared_ptr<ServerResilience>* resilience = nullptr;
  Mutex mu;
  std::vector<Seen> calls ABSL_GUARDED_BY(mu);

  std::vector<Seen> Calls() {
    MutexLock lock(&mu);
    return calls;
  }
};

int64_t Decided(ServerResilience& resilience, const std::string& method) {
  const ServerMethodStats stats = resilience.Stats(method);
  return stats.admitted + stats.rejected_concurrency + stats.rejected_rate +
         stats.faults_aborted;
}

class RecordingInterceptor final : public grpc::experimental::Interceptor {
 public:
  RecordingInterceptor(grpc::experimental::ServerRpcInfo* info, Recorder* recorder)
      : recorder_(recorder) {
    seen_.method = info->method();
  }
  ~RecordingInterceptor() override {
    MutexLock lock(&recorder_->mu);
    recorder_->calls.push_back(seen_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      seen_.decided_before = Decided(**recorder_->resilience, seen_.method);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      seen_.code = status.error_code();
      seen_.message = status.error_message();
      seen_.pushback =
          methods->GetSendTrailingMetadata()->count("grpc-retry-pushback-ms") > 0;
    }
    methods->Proceed();
  }

 private:
  Recorder* const recorder_;
  Seen seen_;
};

class RecordingFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RecordingFactory(Recorder* recorder) : recorder_(recorder) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RecordingInterceptor(info, recorder_);
  }

 private:
  Recorder* const recorder_;
};

class InterceptorOrderTest : public ServerInterceptorsTest {
 protected:
  void StartRecording(const std::string& policy_json) {
    outer_.resilience = &state_;
    inner_.resilience = &state_;
    ServerResilienceOptions options;
    options.outer_interceptors.push_back(std::make_unique<RecordingFactory>(&outer_));
    options.inner_interceptors.push_back(std::make_unique<RecordingFactory>(&inner_));
    Start(policy_json, Clock::Real(), nullptr, std::move(options));
  }

  Recorder outer_;
  Recorder inner_;
};

constexpr char kGetLimit1StoreAborts[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 1}},
  {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
   "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1.0}}]})";

// One Get runs (held at the gate), two more are rejected by the
// concurrency limit, a Store is aborted by fault injection. The outer
// interceptor sees all four calls before any of ours decided on them, and
// exactly the status (and pushback) the client got; the inner one sees them
// after, and for the calls ours answered without the handler the status
// before ours rewrote it (no pushback yet).
TEST_P(InterceptorOrderTest, OuterSeesEveryCallFirstAndTheRealStatus) {
  StartRecording(kGetLimit1StoreAborts);
  PendingCall* running = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  std::vector<grpc::Status> client;
  for (int i = 0; i < 2; ++i) client.push_back(Get("gated"));
  client.push_back(Store());
  gate_.Open();
  ASSERT_TRUE(running->done.WaitForNotificationWithTimeout(kLong));
  client.insert(client.begin(), running->status);

  EXPECT_TRUE(client[0].ok()) << client[0].error_message();
  for (int i = 1; i <= 2; ++i) {
    EXPECT_EQ(client[i].error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(client[i].error_message(), "/cache.v1.CacheService/Get: concurrency limit 1 reached");
  }
  EXPECT_EQ(client[3].error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(client[3].error_message(), "/cache.v1.CacheService/Store: fault injected (UNAVAILABLE)");
  EXPECT_EQ(counters_.get_bodies.load(), 1);
  EXPECT_EQ(counters_.store_bodies.load(), 0);

  // Interceptors are destroyed once the call closed on the server.
  ASSERT_TRUE(Eventually([&] { return outer_.Calls().size() == 4 && inner_.Calls().size() == 4; }));
  std::vector<Seen> outer = outer_.Calls();
  std::vector<Seen> inner = inner_.Calls();
  // In call order: the calls were made one after the other (the first one
  // decided before the others started), but the first one closes last.
  auto in_call_order = [](std::vector<Seen>& seen) {
    std::stable_sort(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) {
      return a.method != b.method ? a.method < b.method : a.decided_before < b.decided_before;
    });
  };
  in_call_order(outer);
  in_call_order(inner);
  // Gets first (decided before: 0, 1, 2), then the Store (0).
  const std::vector<std::string> methods = {kGet, kGet, kGet, kStore};
  const std::vector<int64_t> decided = {0, 1, 2, 0};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(outer[i].method, methods[i]);
    EXPECT_EQ(inner[i].method, methods[i]);
    // Outer: before ours decided on this call; inner: after.
    EXPECT_EQ(outer[i].decided_before, decided[i]);
    EXPECT_EQ(inner[i].decided_before, decided[i] + 1);
    // Outer: what the client got.
    EXPECT_EQ(outer[i].code, client[i].error_code());
    EXPECT_EQ(outer[i].message, client[i].error_message());
  }
  EXPECT_FALSE(outer[0].pushback);
  EXPECT_TRUE(outer[1].pushback);
  EXPECT_TRUE(outer[2].pushback);
  EXPECT_FALSE(outer[3].pushback);
  // Inner: the handler's OK, and the guard's placeholder for the calls ours
  // answered without their handler, before ours rewrote it (sync API:
  // RESOURCE_EXHAUSTED; callback API: the UNIMPLEMENTED that gRPC 1.51's
  // callback handler answers to a request it refuses).
  EXPECT_EQ(inner[0].code, grpc::StatusCode::OK);
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(inner[i].code, GetParam() ? grpc::StatusCode::UNIMPLEMENTED
                                        : grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(inner[i].message, client[i].error_message());
    EXPECT_FALSE(inner[i].pushback);
  }
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, InterceptorOrderTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience
