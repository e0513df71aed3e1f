// cache_demo: a narrated session against the example cache service.
//
// Starts a cache server on a free loopback port in this process, with the
// shipped examples/cache_service/policies.json, runs a scripted session
// against it over a real gRPC channel, and prints what each step did and the
// counters that prove it. Every step checks its own outcome; the demo exits 1
// if one did not happen as described, 0 otherwise. No arguments.

#include <cstdio>
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/load_generator.h"
#include "shipped_policies.h"
#include "google/protobuf/util/json_util.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/policy_set.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "src/grpc_common/status_conversion.h"

namespace {

using cache::v1::CacheService;

class Demo {
 public:
  explicit Demo(std::unique_ptr<CacheService::Stub> stub) : stub_(std::move(stub)) {}

  // Prints a numbered step with its outcome and remembers whether it held.
  void Step(const std::string& what, const std::string& result, bool as_expected) {
    ++steps_;
    std::printf("%2d. %-58s %s%s\n", steps_, what.c_str(), result.c_str(),
                as_expected ? "" : "   <-- NOT AS EXPECTED");
    if (!as_expected) ++failures_;
  }

  grpc::Status Store(const std::string& key, const std::string& value) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    cache::v1::StoreReq request;
    request.set_key(key);
    request.set_value(value);
    cache::v1::StoreResp response;
    return stub_->Store(&context, request, &response);
  }

  grpc::Status Get(const std::string& key, std::string* value) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    cache::v1::GetReq request;
    request.set_key(key);
    cache::v1::GetResp response;
    grpc::Status status = stub_->Get(&context, request, &response);
    *value = response.value();
    return status;
  }

  grpc::Status Dump(std::vector<std::string>* keys) {
    keys->clear();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    auto reader = stub_->Dump(&context, cache::v1::DumpReq());
    cache::v1::DumpItem item;
    while (reader->Read(&item)) keys->push_back(item.key());
    return reader->Finish();
  }

  CacheService::Stub& stub() { return *stub_; }
  int failures() const { return failures_; }

 private:
  std::unique_ptr<CacheService::Stub> stub_;
  int steps_ = 0;
  int failures_ = 0;
};

std::string Show(const grpc::Status& status) { return resilience::FormatStatus(status); }

}  // namespace

// The shipped policies plus an injected delay on Dump: the demo's "slow
// backend", so that Dump calls hold their throttle slots long enough for a
// burst to find both taken.
absl::StatusOr<resilience::PolicySet> DemoPolicies() {
  resilience::v1::PolicyFile file;
  if (auto s = google::protobuf::util::JsonStringToMessage(cache_service::kShippedPolicies, &file);
      !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  for (resilience::v1::MethodConfig& entry : *file.mutable_method_config()) {
    for (const resilience::v1::MethodName& name : entry.name()) {
      if (name.method() == "Dump") {
        entry.mutable_fault_injection()->mutable_delay()->set_nanos(300000000);
      }
    }
  }
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(file, &json); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return resilience::PolicySet::FromJsonString(json);
}

int main() {
  absl::StatusOr<resilience::PolicySet> policies = DemoPolicies();
  if (!policies.ok()) {
    std::fprintf(stderr, "cache_demo: policies.json: %s\n", policies.status().ToString().c_str());
    return 1;
  }
  cache_service::CacheServer::Options options;
  options.store.max_entries = 300;       // small, so that eviction shows
  options.store.max_value_bytes = 4096;  // small, so that the limit shows
  options.policies = *std::move(policies);
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "cache_demo: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("cache_demo: cache server listening on %s (max_entries %zu, "
              "max_value_bytes %zu, policies: examples/cache_service/policies.json)\n",
              (*server)->address().c_str(), options.store.max_entries,
              options.store.max_value_bytes);

  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  Demo demo(CacheService::NewStub(channel));
  std::string value;
  grpc::Status s;

  std::printf("-- the basics\n");
  s = demo.Store("greeting", "hello, world");
  demo.Step("Store greeting = \"hello, world\"", Show(s), s.ok());
  s = demo.Get("greeting", &value);
  demo.Step("Get greeting", absl::StrCat(Show(s), " \"", value, "\""),
            s.ok() && value == "hello, world");
  s = demo.Get("no-such-key", &value);
  demo.Step("Get a key that was never stored", Show(s),
            s.error_code() == grpc::StatusCode::NOT_FOUND);
  s = demo.Store("", "x");
  demo.Step("Store with an empty key", Show(s),
            s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  s = demo.Store("big", std::string(8192, 'x'));
  demo.Step("Store an 8192-byte value (limit 4096)", Show(s),
            s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  std::printf("\n-- a bounded store: least recently used entries go first\n");
  s = grpc::Status::OK;
  for (int i = 0; i < 300 && s.ok(); ++i) {
    s = demo.Store(absl::StrFormat("key-%03d", i), std::string(1024, 'a' + i % 26));
  }
  demo.Step("Store key-000 .. key-299, 1 KiB each", Show(s), s.ok());
  s = demo.Get("greeting", &value);
  demo.Step("Get greeting (301st entry, least recently used)", Show(s),
            s.error_code() == grpc::StatusCode::NOT_FOUND);
  std::vector<std::string> keys;
  s = demo.Dump(&keys);
  demo.Step("Dump", absl::StrCat(Show(s), ", ", keys.size(), " entries, ",
                                 keys.empty() ? "" : keys.front() + " .. " + keys.back()),
            s.ok() && keys.size() == 300 && std::is_sorted(keys.begin(), keys.end()));

  std::printf("\n-- server throttling: Dump allows 2 calls at once (policies.json), and the\n"
              "   backend is slow (an injected 300 ms delay)\n");
  {
    // Eight Dumps start together: the first two hold the slots for 300 ms,
    // the other six are turned away at once.
    constexpr int kBurst = 8;
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReader<cache::v1::DumpItem>>> readers;
    for (int i = 0; i < kBurst; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      contexts.back()->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      readers.push_back(demo.stub().Dump(contexts.back().get(), cache::v1::DumpReq()));
    }
    int ok = 0, throttled = 0;
    std::string message;
    for (auto& reader : readers) {
      cache::v1::DumpItem item;
      while (reader->Read(&item)) {
      }
      grpc::Status status = reader->Finish();
      if (status.ok()) ++ok;
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++throttled;
        message = Show(status);
      }
    }
    const resilience::ServerMethodStats stats =
        (*server)->resilience().Stats("/cache.v1.CacheService/Dump");
    demo.Step(absl::StrCat("A burst of ", kBurst, " concurrent Dumps"),
              absl::StrCat(ok, " OK, ", throttled, " RESOURCE_EXHAUSTED"), ok == 2 && throttled == 6);
    std::printf("      %s\n", message.c_str());
    std::printf("      server counters for Dump: admitted %ld, rejected by the concurrency limit "
                "%ld, in flight %ld\n",
                static_cast<long>(stats.admitted), static_cast<long>(stats.rejected_concurrency),
                static_cast<long>(stats.in_flight));
  }

  std::printf("\n-- load\n");
  cache_service::LoadOptions load;
  load.calls = 2000;
  load.concurrency = 4;
  load.key_space = 400;
  load.value_size = 64;
  cache_service::LoadReport report = cache_service::RunLoad(demo.stub(), load);
  const int64_t answered = report.count(grpc::StatusCode::OK) +
                           report.count(grpc::StatusCode::NOT_FOUND);
  demo.Step("Load: 2000 calls, 4 at a time, 80% Get / 20% Store",
            absl::StrFormat("%d answered, p99 %.2f ms", answered,
                            absl::ToDoubleMilliseconds(report.Percentile(0.99))),
            answered == load.calls);
  std::printf("\n%s", report.Format().c_str());

  (*server)->Shutdown(absl::Seconds(1));
  if (demo.failures() > 0) {
    std::printf("\ncache_demo: %d step(s) did not go as expected\n", demo.failures());
    return 1;
  }
  std::printf("\ncache_demo: every step went as expected\n");
  return 0;
}
