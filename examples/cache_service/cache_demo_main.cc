// cache_demo: a narrated session against the example cache service.
//
// Starts a cache server on a free loopback port in this process, runs a
// scripted session against it over a real gRPC channel, and prints what each
// step did. Every step checks its own outcome; the demo exits 1 if one did not
// happen as described, 0 otherwise. No arguments.

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/load_generator.h"
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

int main() {
  cache_service::CacheServer::Options options;
  options.store.max_entries = 5;        // small, so that eviction shows
  options.store.max_value_bytes = 1024;  // small, so that the limit shows
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "cache_demo: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("cache_demo: cache server listening on %s (max_entries %zu, "
              "max_value_bytes %zu)\n\n",
              (*server)->address().c_str(), options.store.max_entries,
              options.store.max_value_bytes);

  Demo demo(CacheService::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials())));
  std::string value;
  grpc::Status s;

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
  s = demo.Store("big", std::string(2048, 'x'));
  demo.Step("Store a 2048-byte value (limit 1024)", Show(s),
            s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  for (const char* key : {"delta", "alpha", "echo", "charlie", "bravo"}) {
    s = demo.Store(key, absl::StrCat("value of ", key));
    if (!s.ok()) break;
  }
  demo.Step("Store delta, alpha, echo, charlie, bravo", Show(s), s.ok());
  std::vector<std::string> keys;
  s = demo.Dump(&keys);
  const std::string listed = absl::StrJoin(keys, " ");
  demo.Step("Dump (5 entries max: greeting was least recently used)",
            absl::StrCat(Show(s), " [", listed, "]"),
            s.ok() && listed == "alpha bravo charlie delta echo");
  s = demo.Get("greeting", &value);
  demo.Step("Get greeting after eviction", Show(s),
            s.error_code() == grpc::StatusCode::NOT_FOUND);

  cache_service::LoadOptions load;
  load.calls = 2000;
  load.concurrency = 4;
  load.key_space = 10;
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
