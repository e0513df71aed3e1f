#include "bench/server_cost_servers.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "bench/server_passthrough_interceptor.h"
#include "examples/cache_service/cache_service_impl.h"
#include "grpc_resilience/policy.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace resilience::bench {
namespace {

constexpr char kKey[] = "k";
constexpr char kThrottled[] =
    R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "throttle": {"maxConcurrency": 1000}}]})";
constexpr char kThrottledNoReport[] =
    R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "throttle": {"maxConcurrency": 1000, "loadReport": false}}]})";
constexpr char kThrottledShadow[] =
    R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "throttle": {"maxConcurrency": 1000, "enforcement": "shadow"}}]})";
constexpr char kRejectingShadow[] =
    R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "throttle": {"ratePerSecond": 0.001, "burst": 1, "enforcement": "shadow"}}]})";
constexpr char kRejecting[] =
    R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "throttle": {"ratePerSecond": 0.001, "burst": 1}}]})";

const char* PolicyOf(const std::string& mode) {
  // A routed client's calls ask for the load report; others do not.
  if (mode == "served_throttle" || mode == "served_throttle_asked") return kThrottled;
  if (mode == "served_throttle_no_report") return kThrottledNoReport;
  if (mode == "served_throttle_shadow") return kThrottledShadow;
  if (mode == "shadow_would_reject") return kRejectingShadow;
  if (mode == "rejected") return kRejecting;
  return nullptr;
}

// The cache's Get (CacheServiceImpl::Get) on the sync API.
class SyncCacheService final : public cache::v1::CacheService::Service {
 public:
  explicit SyncCacheService(cache_service::CacheStore* store) : store_(store) {}
  grpc::Status Get(grpc::ServerContext* /*context*/, const cache::v1::GetReq* request,
                   cache::v1::GetResp* response) override {
    absl::StatusOr<std::string> value = store_->Get(request->key());
    if (!value.ok()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(value.status().message()));
    }
    response->set_value(*std::move(value));
    return grpc::Status::OK;
  }

 private:
  cache_service::CacheStore* const store_;
};

// Answers every Get at once with a fixed status and trailers (callback API).
class FloorService final : public cache::v1::CacheService::CallbackService {
 public:
  explicit FloorService(Answer answer) : answer_(std::move(answer)) {}
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const cache::v1::GetReq* /*request*/,
                                cache::v1::GetResp* /*response*/) override {
    for (const auto& [k, v] : answer_.trailers) context->AddTrailingMetadata(k, v);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(answer_.status);
    return reactor;
  }

 private:
  const Answer answer_;
};

// The same on the sync API.
class SyncFloorService final : public cache::v1::CacheService::Service {
 public:
  explicit SyncFloorService(Answer answer) : answer_(std::move(answer)) {}
  grpc::Status Get(grpc::ServerContext* context, const cache::v1::GetReq* /*request*/,
                   cache::v1::GetResp* /*response*/) override {
    for (const auto& [k, v] : answer_.trailers) context->AddTrailingMetadata(k, v);
    return answer_.status;
  }

 private:
  const Answer answer_;
};

// Registers `service` as `mode` wires it (guarded behind our interceptors,
// behind one pass-through interceptor, or plain) and hands it to `s`.
template <typename Impl>
bool Register(const std::string& mode, const Answer& answer, grpc::ServerBuilder& builder,
              CostServer& s, std::unique_ptr<Impl> service) {
  if (const char* policy = PolicyOf(mode); policy != nullptr) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy);
    if (!policies.ok()) return false;
    s.resilience = AddServerInterceptors(builder, *policies);
    if (!s.resilience->RegisterGuardedService<cache::v1::CacheService>(builder, service.get())
             .ok()) {
      return false;
    }
  } else {
    if (mode == "served_passthrough" || mode == "floor_passthrough" ||
        mode == "served_passthrough_report") {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> one;
      one.push_back(std::make_unique<ServerPassthroughInterceptor::Factory>(
          mode == "served_passthrough_report" ? answer.trailers
                                              : ServerPassthroughInterceptor::Trailers()));
      builder.experimental().SetInterceptorCreators(std::move(one));
    }
    builder.RegisterService(service.get());
  }
  s.service = std::move(service);
  return true;
}

}  // namespace

Answer GetOnce(cache::v1::CacheService::Stub& stub, bool ask) {
  grpc::ClientContext context;
  if (ask) context.AddMetadata("resilience-orca", "1");
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  cache::v1::GetReq request;
  request.set_key(kKey);
  cache::v1::GetResp response;
  Answer answer;
  answer.status = stub.Get(&context, request, &response);
  for (const auto& [k, v] : context.GetServerTrailingMetadata()) {
    answer.trailers.emplace_back(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
  }
  return answer;
}

std::unique_ptr<cache::v1::CacheService::Stub> StubTo(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return cache::v1::CacheService::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("localhost:", port), grpc::InsecureChannelCredentials(), args));
}

bool KnownServerMode(const std::string& mode) {
  return mode == "served" || mode == "served_passthrough" || mode == "floor" ||
         mode == "floor_passthrough" || mode == "served_passthrough_report" ||
         PolicyOf(mode) != nullptr;
}

bool KnownServerApi(const std::string& api) { return api == "sync" || api == "callback"; }

std::unique_ptr<CostServer> ServeCostServer(const std::string& api, const std::string& mode,
                                            const Answer& answer) {
  if (!KnownServerApi(api) || !KnownServerMode(mode)) return nullptr;
  const bool sync = api == "sync";
  auto s = std::make_unique<CostServer>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &s->port);
  if (sync) {
    // gRPC's default of 1 to 2 polling threads makes the sync server start a
    // thread, and end one, whenever two events come at once (~42k
    // instructions each, for 0.3% to 15% of the calls as the timing falls):
    // with room for 4 the threads of the warm-up stay.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  }
  s->store = std::make_unique<cache_service::CacheStore>(cache_service::CacheStore::Options());
  if (!s->store->Store(kKey, std::string(100, 'v')).ok()) return nullptr;
  const bool floor = mode == "floor" || mode == "floor_passthrough";
  bool registered = false;
  if (sync && floor) {
    registered = Register(mode, answer, builder, *s, std::make_unique<SyncFloorService>(answer));
  } else if (sync) {
    registered = Register(mode, answer, builder, *s, std::make_unique<SyncCacheService>(s->store.get()));
  } else if (floor) {
    registered = Register(mode, answer, builder, *s, std::make_unique<FloorService>(answer));
  } else {
    registered = Register(mode, answer, builder, *s,
                          std::make_unique<cache_service::CacheServiceImpl>(s->store.get()));
  }
  if (!registered) return nullptr;
  s->server = builder.BuildAndStart();
  return s->server != nullptr ? std::move(s) : nullptr;
}

}  // namespace resilience::bench
