// throttle.perCaller over real channels on localhost:0: each tenant (a
// request header's value) or peer has its own concurrency and rate limit,
// callers without a key share the default bucket, junk keys are hashed and
// counted, the metrics are by scope, and a policy update keeps the keys of
// unchanged settings.

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr char kPerTenant2[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"perCaller": {"key": {"header": "x-tenant-id"}, "maxConcurrency": 2}}}]})";

grpc::Status GetAs(cache::v1::CacheService::Stub& stub, const std::string& tenant,
                   std::string* pushback = nullptr) {
  return GetWithHeader(stub, "x-tenant-id", tenant, pushback);
}

std::string Metrics(ServerResilience& resilience) {
  PrometheusText text;
  resilience.AppendMetrics(text);
  return text.Finish();
}

class PerCallerTest : public ServerInterceptorsTest {
 protected:
  // A held Get from `tenant`.
  PendingCall* StartGetAs(const std::string& tenant) {
    MutexLock lock(&pending_mu_);
    pending_.push_back(std::make_unique<PendingCall>());
    PendingCall* call = pending_.back().get();
    call->request.set_key("gated");
    call->context.AddMetadata("x-tenant-id", tenant);
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + kLong));
    stub_->async()->Get(&call->context, &call->request, &call->response, [call](grpc::Status s) {
      call->status = std::move(s);
      call->done.Notify();
    });
    return call;
  }
};

TEST_P(PerCallerTest, EachTenantHasItsOwnConcurrency) {
  Start(kPerTenant2);
  StartGetAs("a");
  StartGetAs("a");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  const grpc::Status refused = GetAs(*stub_, "a");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(),
            "/cache.v1.CacheService/Get: per-caller concurrency limit 2 reached for caller "
            "\"a\"");
  // The others keep their share while a is at its limit.
  EXPECT_TRUE(GetAs(*stub_, "b").ok());
  EXPECT_TRUE(GetAs(*stub_, "").ok());  // no key: the default bucket
  // A key over 128 bytes is tracked as its hash, never stored as it came.
  EXPECT_TRUE(GetAs(*stub_, std::string(300, 'j')).ok());
  EXPECT_EQ(state_->Stats(kGet).rejected_concurrency, 1);
  const std::string metrics = Metrics(*state_);
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_per_caller_keys{scope=\""
                                 "cache.v1.CacheService/Get\"} 3"));  // a, b, the hash
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_per_caller_keys_hashed_total{scope=\""
                                 "cache.v1.CacheService/Get\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_per_caller_rejections_total{scope=\""
                                 "cache.v1.CacheService/Get\",cause=\"concurrency\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("grpc_resilience_server_rejections_total{grpc_method=\""
                                 "/cache.v1.CacheService/Get\",cause=\"concurrency\"} 1"));
  // a's slots come back when its calls end.
  gate_.Open();
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 0; }));
  ASSERT_TRUE(Eventually([&] { return GetAs(*stub_, "a").ok(); }));
}

TEST_P(PerCallerTest, EachTenantHasItsOwnRate) {
  SimulatedClock clock;  // never advances: a key's tokens are its burst
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"ratePerSecond": 1000,
                  "perCaller": {"key": {"header": "x-tenant-id"}, "ratePerSecond": 2,
                                "burst": 2, "maxKeys": 8}}}]})",
        clock);
  EXPECT_TRUE(GetAs(*stub_, "noisy").ok());
  EXPECT_TRUE(GetAs(*stub_, "noisy").ok());
  std::string pushback;
  const grpc::Status refused = GetAs(*stub_, "noisy", &pushback);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(),
            "/cache.v1.CacheService/Get: per-caller rate limit 2/s reached for caller "
            "\"noisy\"");
  EXPECT_EQ(pushback, "500");  // the key's next token
  EXPECT_TRUE(GetAs(*stub_, "quiet").ok());
  EXPECT_EQ(state_->Stats(kGet).rejected_rate, 1);
  // SHEDDABLE sees half of the key's burst: one token, taken.
  grpc::ClientContext context;
  context.AddMetadata("x-tenant-id", "quiet");
  context.AddMetadata("resilience-criticality", "SHEDDABLE");
  cache::v1::GetReq request;
  request.set_key("fast");
  cache::v1::GetResp response;
  EXPECT_EQ(stub_->Get(&context, request, &response).error_message(),
            "/cache.v1.CacheService/Get: per-caller rate limit 2/s reached for caller "
            "\"quiet\" for SHEDDABLE calls (share 0.5)");
  EXPECT_THAT(Metrics(*state_),
              HasSubstr("grpc_resilience_server_per_caller_rejections_total{scope=\""
                        "cache.v1.CacheService/Get\",cause=\"rate\"} 2"));
}

// {"peer": true}: the peer's address without its port (no TLS here).
TEST_P(PerCallerTest, PeerKeyIsTheAddressWithoutThePort) {
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"perCaller": {"key": {"peer": true}, "maxConcurrency": 1}}}]})");
  StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  // Another connection from the same host is the same caller.
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  auto other = cache::v1::CacheService::NewStub(server_->NewChannel({}, args));
  const grpc::Status refused = GetAs(*other, "");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              MatchesRegex("/cache.v1.CacheService/Get: per-caller concurrency limit 1 reached "
                           "for caller \"ipv(4:127\\.0\\.0\\.1|6:\\[::1\\])\""));
}

// An update that leaves perCaller as it was keeps its keys (the calls a
// tenant holds still count); one that changes it starts afresh.
TEST_P(PerCallerTest, UpdateKeepsUnchangedPerCallerLimits) {
  Start(kPerTenant2);
  StartGetAs("a");
  StartGetAs("a");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 2; }));
  absl::StatusOr<PolicySet> more = PolicySet::FromJsonString(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"perCaller": {"key": {"header": "x-tenant-id"}, "maxConcurrency": 2}}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Store"}],
     "throttle": {"maxConcurrency": 9}}]})");
  ASSERT_TRUE(more.ok()) << more.status();
  ASSERT_TRUE(state_->Update(*more).ok());
  EXPECT_EQ(GetAs(*stub_, "a").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  absl::StatusOr<PolicySet> three = PolicySet::FromJsonString(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"perCaller": {"key": {"header": "x-tenant-id"}, "maxConcurrency": 3}}}]})");
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_TRUE(state_->Update(*three).ok());
  EXPECT_TRUE(GetAs(*stub_, "a").ok());
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, PerCallerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience::testing
