// What a server-side rejection costs the server, in instructions per call
// (callgrind), beside a served call of the cache example's Get:
//
//   served            the cache service, no interceptors
//   served_throttle   the cache service behind a throttle that never binds
//                     (AddServerInterceptors + RegisterGuardedService, as
//                     users wire it); its answers carry the load report
//                     (throttle.loadReport, on by default)
//   served_throttle_no_report  the same with "loadReport": false
//   served_passthrough  the cache service with one server interceptor that
//                     only calls Proceed(): what any interceptor costs gRPC
//   served_throttle_shadow  served_throttle with the throttle in shadow mode
//                     ("enforcement": "shadow"; docs/shadow-mode-server.md)
//   shadow_would_reject  the rejected mode's throttle in shadow: every call
//                     counted as one it would have rejected, and served
//   rejected          the same wiring, every call rejected by the throttle
//                     (ratePerSecond 0.001: the warm-up takes the one token)
//   floor             no interceptors; a handler that answers at once the
//                     status and trailers the rejection sends (read from a
//                     rejected call first): what any rejection costs gRPC
//
// The driver runs each server under `valgrind --tool=callgrind
// --instr-atstart=no` (a child process, --serve=MODE), makes the warm-up
// calls natively from this process, has the server switch instrumentation on
// (CALLGRIND_START_INSTRUMENTATION + ZERO_STATS, every thread of the server
// counted), makes --calls sequential Gets, has it switch it off, and divides
// the server's total instructions by the calls.
//
//   server_rejection_cost_bench [--calls=2000] [--warmup_calls=200]
//   server_rejection_cost_bench --serve=MODE --port_file=PATH   (the child)

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/server_passthrough_interceptor.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/cache_store.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#endif

ABSL_FLAG(std::string, serve, "",
          "Child: serve MODE (served, served_throttle, served_throttle_no_report, "
          "served_passthrough, served_throttle_shadow, shadow_would_reject, rejected, floor).");
ABSL_FLAG(std::string, port_file, "", "Child: where to write the port.");
ABSL_FLAG(int, calls, 2000, "Measured calls per mode.");
ABSL_FLAG(int, warmup_calls, 200, "Calls before the measured ones.");
ABSL_FLAG(std::vector<std::string>, modes,
          std::vector<std::string>({"served", "served_throttle", "rejected", "floor",
                                    "served_throttle_no_report", "served_passthrough"}),
          "The modes to measure (the rejection table needs the first four, the load "
          "report's table served_throttle and the last two).");

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

// The status and trailers a client saw.
struct Answer {
  grpc::Status status;
  std::vector<std::pair<std::string, std::string>> trailers;
};

Answer GetOnce(cache::v1::CacheService::Stub& stub) {
  grpc::ClientContext context;
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

// Answers every Get at once with a fixed status and trailers.
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

// A server for `mode` on a free port; `port` is set.
struct Served {
  std::unique_ptr<cache_service::CacheStore> store;
  std::unique_ptr<grpc::Service> service;
  std::shared_ptr<resilience::ServerResilience> resilience;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

std::unique_ptr<Served> Serve(const std::string& mode, const Answer& floor_answer) {
  auto s = std::make_unique<Served>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &s->port);
  s->store = std::make_unique<cache_service::CacheStore>(cache_service::CacheStore::Options());
  if (!s->store->Store(kKey, std::string(100, 'v')).ok()) return nullptr;
  if (mode == "floor") {
    s->service = std::make_unique<FloorService>(floor_answer);
    builder.RegisterService(s->service.get());
  } else {
    auto service = std::make_unique<cache_service::CacheServiceImpl>(s->store.get());
    if (mode == "served" || mode == "served_passthrough") {
      if (mode == "served_passthrough") {
        std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> one;
        one.push_back(std::make_unique<resilience::bench::ServerPassthroughInterceptor::Factory>());
        builder.experimental().SetInterceptorCreators(std::move(one));
      }
      builder.RegisterService(service.get());
    } else {
      absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(
          mode == "rejected"                    ? kRejecting
          : mode == "served_throttle_no_report" ? kThrottledNoReport
          : mode == "served_throttle_shadow"    ? kThrottledShadow
          : mode == "shadow_would_reject"       ? kRejectingShadow
                                                : kThrottled);
      if (!policies.ok()) return nullptr;
      s->resilience = resilience::AddServerInterceptors(builder, *policies);
      if (!s->resilience->RegisterGuardedService<cache::v1::CacheService>(builder, service.get())
               .ok()) {
        return nullptr;
      }
    }
    s->service = std::move(service);
  }
  s->server = builder.BuildAndStart();
  return s->server != nullptr ? std::move(s) : nullptr;
}

// The child: serves, and switches callgrind's instrumentation on at "start"
// and off at "stop" (lines on stdin); "<port_file>.on" says it is on.
int Child(const std::string& mode, const std::string& port_file) {
  Answer floor_answer;
  if (mode == "floor") {
    // What the rejection answers, from a rejecting server of our own
    // (before any instrumentation).
    std::unique_ptr<Served> rejecting = Serve("rejected", {});
    if (rejecting == nullptr) return 1;
    auto stub = StubTo(rejecting->port);
    GetOnce(*stub);  // takes the one token
    floor_answer = GetOnce(*stub);
    rejecting->server->Shutdown();
    if (floor_answer.status.ok()) return 1;  // the throttle must have rejected it
  }
  std::unique_ptr<Served> served = Serve(mode, floor_answer);
  if (served == nullptr) return 1;
  std::ofstream(port_file) << served->port << "\n";
  std::string line;
  char buffer[64];
  while (fgets(buffer, sizeof(buffer), stdin) != nullptr) {
    line = buffer;
    if (line == "start\n") {
      CALLGRIND_START_INSTRUMENTATION;
      CALLGRIND_ZERO_STATS;
      std::ofstream(port_file + ".on") << "on\n";
    } else if (line == "stop\n") {
      CALLGRIND_STOP_INSTRUMENTATION;
      break;
    }
  }
  served->server->Shutdown();
  return 0;
}

// Waits (bounded) for `path` to hold a line; its first number.
int AwaitFile(const std::string& path) {
  for (int i = 0; i < 6000; ++i) {
    std::ifstream in(path);
    int value = 0;
    if (in >> value) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// One mode under callgrind: the server's instructions per measured call,
// and the code every measured call got; -1 on failure.
double Measure(const std::string& self, const std::string& mode, int calls, int warmup,
               std::string* what) {
  const std::string dir = absl::StrCat("/tmp/server_rejection_cost.", getpid());
  std::system(absl::StrCat("mkdir -p ", dir).c_str());
  const std::string port_file = absl::StrCat(dir, "/", mode, ".port");
  const std::string out = absl::StrCat(dir, "/callgrind.", mode);
  const std::string command = absl::StrCat(
      "valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=", out, " ", self,
      " --serve=", mode, " --port_file=", port_file, " 2>", dir, "/", mode, ".log");
  FILE* child = popen(command.c_str(), "w");
  if (child == nullptr) return -1;
  const int port = AwaitFile(port_file);
  if (port == 0) return -1;
  auto stub = StubTo(port);
  for (int i = 0; i < warmup; ++i) GetOnce(*stub);
  std::fputs("start\n", child);
  std::fflush(child);
  AwaitFile(port_file + ".on");
  std::map<std::string, int> codes;
  for (int i = 0; i < calls; ++i) {
    const Answer a = GetOnce(*stub);
    ++codes[absl::StrCat(a.status.error_code(), " ", a.status.error_message())];
  }
  std::fputs("stop\n", child);
  std::fflush(child);
  pclose(child);
  for (const auto& [code, n] : codes) absl::StrAppend(what, "[", n, "x code ", code, "] ");
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("totals: ", 0) == 0) return std::stod(line.substr(8)) / calls;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const std::string mode = absl::GetFlag(FLAGS_serve); !mode.empty()) {
    return Child(mode, absl::GetFlag(FLAGS_port_file));
  }
  const std::string self = argv[0];
  const int calls = absl::GetFlag(FLAGS_calls);
  const int warmup = absl::GetFlag(FLAGS_warmup_calls);
  std::map<std::string, double> ir;
  for (const std::string& mode : absl::GetFlag(FLAGS_modes)) {
    std::string what;
    ir[mode] = Measure(self, mode, calls, warmup, &what);
    std::printf("%s: %.1fk instructions/call (server, callgrind, %d calls) %s\n", mode.c_str(),
                ir[mode] / 1000, calls, what.c_str());
    std::fflush(stdout);
    if (ir[mode] <= 0) return 1;
  }
  if (ir.count("served_throttle") && ir.count("served_throttle_no_report") &&
      ir.count("served_passthrough") && ir.count("served")) {
    const double report = ir["served_throttle"] - ir["served_throttle_no_report"];
    std::printf(
        "\nload report: served_throttle %.1fk, served_throttle_no_report %.1fk, "
        "served_passthrough %.1fk, served %.1fk: the report adds %.2fk (%.1f %% of the "
        "throttled call without it)\n",
        ir["served_throttle"] / 1000, ir["served_throttle_no_report"] / 1000,
        ir["served_passthrough"] / 1000, ir["served"] / 1000, report / 1000,
        100 * report / ir["served_throttle_no_report"]);
  }
  if (ir.count("served_throttle") && ir.count("served_throttle_shadow")) {
    std::printf("\nshadow: served_throttle_shadow / served_throttle = %.3f",
                ir["served_throttle_shadow"] / ir["served_throttle"]);
    if (ir.count("shadow_would_reject")) {
      std::printf(", shadow_would_reject / served_throttle = %.3f",
                  ir["shadow_would_reject"] / ir["served_throttle"]);
    }
    std::printf(" (target <= 1.02)\n");
  }
  if (!ir.count("served") || !ir.count("served_throttle") || !ir.count("rejected") ||
      !ir.count("floor")) {
    return 0;
  }
  std::printf(
      "\n| server | instructions/call | vs floor | vs served |\n|---|---|---|---|\n");
  for (const char* mode : {"served", "served_throttle", "rejected", "floor"}) {
    std::printf("| %s | %.1fk | %.3f | %.3f |\n", mode, ir[mode] / 1000, ir[mode] / ir["floor"],
                ir[mode] / ir["served"]);
  }
  return 0;
}
