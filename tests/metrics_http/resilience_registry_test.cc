// ResilienceRegistry over a real server and channels: one MetricsHttpServer
// serves every registered object (metrics, /status.json, breaker commands
// routed by channel), and a removed or destroyed object is gone from it.

#include "grpc_resilience/resilience_registry.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/cache_store.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc_resilience/client.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/server.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/metrics/http_test_client.h"
#include "tests/testing/test_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Exchange;
using ::resilience::testing::Fetch;
using ::resilience::testing::HttpResponse;
using ::resilience::testing::TestServer;
using ::testing::HasSubstr;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr char kPolicies[] = R"json({"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "breaker": {"threeState": {}}}]})json";

PolicySet Policies(const std::string& json) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(json);
  EXPECT_TRUE(policies.ok()) << policies.status();
  return policies.ok() ? *std::move(policies) : PolicySet();
}

// The (channel or server, method) rows of a /status.json list.
std::vector<std::string> Rows(const google::protobuf::Struct& json, const std::string& list,
                              const std::string& owner) {
  std::vector<std::string> rows;
  for (const auto& row : json.fields().at(list).list_value().values()) {
    const auto& fields = row.struct_value().fields();
    rows.push_back(absl::StrCat(fields.at(owner).string_value(), " ",
                                fields.at("method").string_value()));
  }
  return rows;
}

class ResilienceRegistryTest : public ::testing::Test {
 protected:
  ResilienceRegistryTest() : store_(cache_service::CacheStore::Options{}), service_(&store_) {
    recent_ = std::make_shared<RecentEvents>(10, nullptr);
    TestServer::Options options;
    options.services.push_back(&service_);
    options.configure = [this](grpc::ServerBuilder& builder) {
      ServerResilienceOptions server_options;
      server_options.events = recent_;
      server_ = AddServerInterceptors(builder, PolicySet(), std::move(server_options));
    };
    test_server_ = TestServer::Start(std::move(options));
  }

  ResilientChannel Channel(const std::string& name) {
    ResilientChannelOptions options;
    options.resilience.name = name;
    options.resilience.events = recent_;
    return CreateResilientChannel(test_server_->address(), grpc::InsecureChannelCredentials(),
                                  Policies(kPolicies), std::move(options));
  }

  // `registry` served with the admin endpoint on; null (a test failure)
  // when it cannot start.
  static std::unique_ptr<MetricsHttpServer> ServeAdmin(const ResilienceRegistry& registry) {
    MetricsHttpServer::Options options;
    options.admin.enabled = true;
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http = registry.Serve(options);
    EXPECT_TRUE(http.ok()) << http.status();
    return http.ok() ? *std::move(http) : nullptr;
  }

  // A POST to the admin route /admin/<route> (breaker, enforcement).
  std::optional<HttpResponse> Command(int port, const std::string& query,
                                      const std::string& route = "breaker") {
    return Exchange(port, absl::StrCat("POST /admin/", route, "?", query,
                                       " HTTP/1.1\r\nHost: 127.0.0.1:", port,
                                       "\r\nX-Resilience-Admin: 1\r\nContent-Length: 0\r\n\r\n"));
  }

  google::protobuf::Struct StatusJson(int port) {
    google::protobuf::Struct json;
    std::optional<HttpResponse> response = Fetch(port, "GET", "/status.json");
    EXPECT_TRUE(response.has_value() && response->status == 200);
    if (response.has_value()) {
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(response->body, &json).ok())
          << response->body;
    }
    return json;
  }

  cache_service::CacheStore store_;
  cache_service::CacheServiceImpl service_;
  std::shared_ptr<RecentEvents> recent_;
  std::shared_ptr<ServerResilience> server_;
  std::unique_ptr<TestServer> test_server_;
};

TEST_F(ResilienceRegistryTest, ServesEveryRegisteredObject) {
  ASSERT_NE(test_server_, nullptr);
  ResilientChannel a = Channel("a");
  ResilientChannel b = Channel("b");
  ResilienceRegistry registry;
  ASSERT_TRUE(registry.Add(a.resilience).ok());
  ASSERT_TRUE(registry.Add(b.resilience).ok());
  ASSERT_TRUE(registry.Add(server_, "cache-server").ok());
  registry.SetEvents(recent_);
  EXPECT_EQ(registry.Add(Channel("a").resilience).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Add(std::shared_ptr<ClientResilience>()).code(),
            absl::StatusCode::kInvalidArgument);

  std::unique_ptr<MetricsHttpServer> http = ServeAdmin(registry);
  ASSERT_NE(http, nullptr);
  const int port = http->port();

  auto stub = cache::v1::CacheService::NewStub(a.channel);
  std::string value;
  const grpc::Status got = cache_service::GetValue(*stub, "k", &value, absl::Seconds(10));
  EXPECT_EQ(got.error_code(), grpc::StatusCode::NOT_FOUND) << got.error_message();

  // One scrape holds the channel's and the server's metrics.
  std::optional<HttpResponse> scrape = Fetch(port, "GET", "/metrics");
  ASSERT_TRUE(scrape.has_value());
  EXPECT_EQ(scrape->status, 200);
  EXPECT_THAT(scrape->body, HasSubstr("grpc_resilience_client_calls_total{grpc_method=\"" +
                                      std::string(kGet) + "\",channel=\"a\""));
  EXPECT_THAT(scrape->body, HasSubstr("grpc_resilience_server_"));

  // A command reaches the channel it names, and only it.
  std::optional<HttpResponse> forced =
      Command(port, "channel=b&method=%2Fcache.v1.CacheService%2FGet&command=force_open");
  ASSERT_TRUE(forced.has_value());
  EXPECT_EQ(forced->status, 200) << forced->body;
  ASSERT_TRUE(b.resilience->BreakerSnapshotOf(kGet).has_value());
  EXPECT_EQ(b.resilience->BreakerSnapshotOf(kGet)->mode, BreakerMode::kForceOpen);
  const std::optional<BreakerSnapshot> a_breaker = a.resilience->BreakerSnapshotOf(kGet);
  EXPECT_TRUE(!a_breaker.has_value() || a_breaker->mode == BreakerMode::kNormal);

  // An unknown channel: 404, naming it and the ones there are.
  std::optional<HttpResponse> unknown =
      Command(port, "channel=c&method=%2Fcache.v1.CacheService%2FGet&command=force_open");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("no channel 'c'; the channels are 'a', 'b'"));

  // /status.json lists both channels, the server, and the events.
  google::protobuf::Struct json = StatusJson(port);
  EXPECT_THAT(Rows(json, "client_methods", "channel"),
              ::testing::IsSupersetOf({std::string("a ") + kGet, std::string("b ") + kGet}));
  EXPECT_THAT(Rows(json, "server_methods", "server"),
              ::testing::Contains(std::string("cache-server ") + kGet));
  EXPECT_THAT(json.DebugString(), HasSubstr("force_open"));

  // Removed: neither listed, nor commanded, nor scraped.
  EXPECT_TRUE(registry.Remove(b.resilience.get()));
  EXPECT_FALSE(registry.Remove(b.resilience.get()));
  EXPECT_EQ(registry.ChannelNames(), std::vector<std::string>{"a"});
  json = StatusJson(port);
  for (const std::string& row : Rows(json, "client_methods", "channel")) {
    EXPECT_NE(row.substr(0, 2), "b ") << row;
  }
  std::optional<HttpResponse> gone =
      Command(port, "channel=b&method=%2Fcache.v1.CacheService%2FGet&command=automatic");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->status, 404);
  EXPECT_THAT(gone->body, HasSubstr("no channel 'b'; the channels are 'a'"));
  EXPECT_EQ(b.resilience->BreakerSnapshotOf(kGet)->mode, BreakerMode::kForceOpen);
  EXPECT_TRUE(registry.Remove(server_.get()));
  scrape = Fetch(port, "GET", "/metrics");
  ASSERT_TRUE(scrape.has_value());
  EXPECT_THAT(scrape->body, ::testing::Not(HasSubstr("grpc_resilience_server_")));
}

// POST /admin/enforcement through the registry reaches the named
// channel's SetEnforcement(): its breaker goes to shadow mode in place.
TEST_F(ResilienceRegistryTest, EnforcementRouteReachesTheChannel) {
  ASSERT_NE(test_server_, nullptr);
  ResilientChannel a = Channel("a");
  ResilienceRegistry registry;
  ASSERT_TRUE(registry.Add(a.resilience).ok());
  registry.SetEvents(recent_);
  std::unique_ptr<MetricsHttpServer> http = ServeAdmin(registry);
  ASSERT_NE(http, nullptr);
  const int port = http->port();
  const auto post = [this, port](const std::string& query) {
    return Command(port, query, "enforcement");
  };
  std::optional<HttpResponse> r =
      post("channel=a&method=%2Fcache.v1.CacheService%2FGet&policy=breaker&mode=shadow");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(a.resilience->Stats(kGet).breaker_enforcement, EnforcementMode::kShadow);
  google::protobuf::Struct json = StatusJson(port);
  EXPECT_THAT(json.DebugString(), HasSubstr("operator enforcement shadow of breaker"));
  // Errors as SetEnforcement() says them, with their HTTP status.
  r = post("channel=a&method=%2Fcache.v1.CacheService%2FGet&policy=bulkhead&mode=shadow");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("a bulkhead"));
  r = post("channel=a&method=%2Fcache.v1.CacheService%2FGet&policy=throttle&mode=shadow");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);
  r = post("channel=z&method=%2Fcache.v1.CacheService%2FGet&policy=breaker&mode=off");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("no channel 'z'; the channels are 'a'"));
}

// The same route reaches the registered server's throttle by its name.
TEST_F(ResilienceRegistryTest, EnforcementRouteReachesTheServer) {
  ASSERT_NE(test_server_, nullptr);
  ASSERT_TRUE(server_
                  ->Update(Policies(R"({"methodConfig": [{
                      "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                      "throttle": {"maxConcurrency": 4}}]})"))
                  .ok());
  ResilienceRegistry registry;
  ASSERT_TRUE(registry.Add(server_, "s").ok());
  std::unique_ptr<MetricsHttpServer> http = ServeAdmin(registry);
  ASSERT_NE(http, nullptr);
  const int port = http->port();
  const auto post = [this, port](const std::string& query) {
    return Command(port, query, "enforcement");
  };
  std::optional<HttpResponse> r =
      post("server=s&method=%2Fcache.v1.CacheService%2FGet&policy=throttle&mode=shadow");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("\"server\":\"s\""));
  EXPECT_THAT(StatusJson(port).DebugString(), HasSubstr("throttle: shadow"));
  // A client policy on a server, and a server that is not registered.
  r = post("server=s&method=%2Fcache.v1.CacheService%2FGet&policy=breaker&mode=shadow");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400) << r->body;
  r = post("server=t&method=%2Fcache.v1.CacheService%2FGet&policy=throttle&mode=off");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("no server 't'; the server is 's'"));
}

// The registry holds its objects weakly: one destroyed while registered is
// dropped, and the served callbacks outlive the registry itself.
TEST_F(ResilienceRegistryTest, DestroyedObjectsAndRegistryAreNotTouched) {
  ASSERT_NE(test_server_, nullptr);
  std::unique_ptr<MetricsHttpServer> http;
  std::weak_ptr<ClientResilience> watched;
  {
    ResilienceRegistry registry;
    ResilientChannel a = Channel("a");
    watched = a.resilience;
    ASSERT_TRUE(registry.Add(a.resilience).ok());
    http = ServeAdmin(registry);
    ASSERT_NE(http, nullptr);
    EXPECT_EQ(registry.ChannelNames(), std::vector<std::string>{"a"});
  }  // the channel, then the registry, destroyed; the server still serves
  EXPECT_TRUE(watched.expired());
  std::optional<HttpResponse> unknown =
      Command(http->port(), "channel=a&method=%2Fcache.v1.CacheService%2FGet&command=reset");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("no channel 'a': no channel is registered"));
  std::optional<HttpResponse> status = Fetch(http->port(), "GET", "/status.json");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->status, 200);
}

// Channels added, removed and destroyed while other threads render and
// command: nothing destroyed is touched (ASan, TSan), and a command reaches
// only a channel alive and registered. Bounded in count, not in time.
TEST(ResilienceRegistryConcurrencyTest, ObjectsComeAndGoWhileServed) {
  ResilienceRegistry registry;
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::atomic<int> found{0};
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      for (int k = 0; !done.load(); ++k) {
        PrometheusText text;
        registry.AppendMetrics(text);
        (void)text.Finish();
        (void)registry.Status();
        BreakerCommandRequest request;
        request.channel = absl::StrCat("c", k % 200);
        request.method = kGet;
        request.command = BreakerCommand::kReset;
        const absl::Status status = registry.Control(request);
        if (status.ok()) ++found;
        EXPECT_TRUE(status.ok() || absl::IsNotFound(status)) << status;
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    ClientResilience::Options options;
    // A name of its own: a reader may still hold a destroyed-while-registered
    // channel for the length of its request, and a second live channel of
    // the same name is refused (AlreadyExists), as it should be.
    options.name = absl::StrCat("c", i);
    auto client = std::make_shared<ClientResilience>(Policies(kPolicies), options);
    ASSERT_TRUE(registry.Add(client).ok());
    if (i % 2 == 0) {
      EXPECT_TRUE(registry.Remove(client.get()));
    }
    // Odd ones are destroyed while registered.
  }
  done = true;
  for (std::thread& reader : readers) reader.join();
  EXPECT_TRUE(registry.ChannelNames().empty());
}

TEST(ResilienceRegistryOptionsTest, RefusesCallbacksItWouldReplace) {
  ResilienceRegistry registry;
  MetricsHttpServer::Options options;
  options.status = [] { return StatusReport(); };
  absl::StatusOr<MetricsHttpServer::Options> served = registry.ServeOptions(options);
  EXPECT_EQ(served.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(served.status().message(), HasSubstr("options.status is set"));
  options.status = nullptr;
  options.admin.control = [](const BreakerCommandRequest&) { return absl::OkStatus(); };
  served = registry.ServeOptions(options);
  EXPECT_THAT(served.status().message(), HasSubstr("options.admin.control is set"));
}

}  // namespace
}  // namespace resilience
