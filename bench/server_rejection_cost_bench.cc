// What the library costs the server, in instructions per call (callgrind),
// on the sync and the callback API: a served Get behind a throttle that never
// binds against one pass-through interceptor (what gRPC charges any
// interceptor), and a call the throttle rejects against a handler answering
// the same status at once. The servers (modes) are in
// bench/server_cost_servers.h.
//
// The driver runs each server under `valgrind --tool=callgrind
// --instr-atstart=no` (a child process, --serve=MODE --api=API), makes the
// warm-up calls natively from this process, has the server switch
// instrumentation on (CALLGRIND_START_INSTRUMENTATION + ZERO_STATS, every
// thread of the server counted), makes --calls sequential Gets, has it switch
// it off, and divides the server's total instructions by the calls. The
// client's own work is in this process, which runs natively and is never
// counted. With --repeats=N every (api, mode) is measured N times in
// interleaved rounds and the median is reported. The callgrind files stay in
// --out_dir for callgrind_annotate.
//
//   server_rejection_cost_bench [--calls=2000] [--warmup_calls=200] [--repeats=1]
//       [--apis=callback,sync] [--modes=...] [--out_dir=/tmp/server_rejection_cost.PID]
//   server_rejection_cost_bench --serve=MODE --api=API --port_file=PATH   (the child)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
#include "bench/server_cost_servers.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#endif

ABSL_FLAG(std::string, serve, "", "Child: serve MODE (bench/server_cost_servers.h).");
ABSL_FLAG(std::string, api, "callback", "Child: the server API, sync or callback.");
ABSL_FLAG(std::string, port_file, "", "Child: where to write the port.");
ABSL_FLAG(int, calls, 2000, "Measured calls per mode.");
ABSL_FLAG(int, warmup_calls, 200, "Calls before the measured ones.");
ABSL_FLAG(int, repeats, 1, "Measurements of each (api, mode), in rounds; the median is reported.");
ABSL_FLAG(std::vector<std::string>, apis, std::vector<std::string>({"callback", "sync"}),
          "The server APIs to measure.");
ABSL_FLAG(std::vector<std::string>, modes,
          std::vector<std::string>({"served", "served_passthrough", "served_passthrough_report",
                                    "served_throttle", "served_throttle_asked",
                                    "served_throttle_no_report", "rejected",
                                    "floor", "floor_passthrough"}),
          "The modes to measure (served_throttle_shadow and shadow_would_reject add shadow "
          "mode's cost).");
ABSL_FLAG(bool, one_cpu, true,
          "Preload bench_one_cpu.so (next to this binary) into the servers: Abseil's locks "
          "do not spin under valgrind (bench/one_cpu_preload.cc).");
ABSL_FLAG(std::string, server_env, "",
          "Environment assignments for the server under valgrind (e.g. LD_PRELOAD=...).");
ABSL_FLAG(std::string, out_dir, "", "Where the callgrind files go (default /tmp/server_rejection_cost.PID).");

namespace {

using resilience::bench::Answer;

// The child: serves, and switches callgrind's instrumentation on at "start"
// and off at "stop" (lines on stdin); "<port_file>.on" says it is on.
int Child(const std::string& api, const std::string& mode, const std::string& port_file) {
  Answer floor_answer;
  if (mode == "floor" || mode == "floor_passthrough") {
    // What the rejection answers on this API, from a rejecting server of our
    // own (before any instrumentation).
    auto rejecting = resilience::bench::ServeCostServer(api, "rejected", {});
    if (rejecting == nullptr) return 1;
    auto stub = resilience::bench::StubTo(rejecting->port);
    resilience::bench::GetOnce(*stub);  // takes the one token
    floor_answer = resilience::bench::GetOnce(*stub);
    rejecting->server->Shutdown();
    if (floor_answer.status.ok()) return 1;  // the throttle must have rejected it
  }
  if (mode == "served_passthrough_report") {
    // The trailers a served call of a throttled server gets (its load report).
    auto throttled = resilience::bench::ServeCostServer(api, "served_throttle", {});
    if (throttled == nullptr) return 1;
    floor_answer =
        resilience::bench::GetOnce(*resilience::bench::StubTo(throttled->port), /*ask=*/true);
    throttled->server->Shutdown();
    if (!floor_answer.status.ok() || floor_answer.trailers.empty()) return 1;
  }
  auto served = resilience::bench::ServeCostServer(api, mode, floor_answer);
  if (served == nullptr) return 1;
  // The port, and the CPUs the server's Abseil sees (1 under --one_cpu).
  std::ofstream(port_file) << served->port << " " << std::thread::hardware_concurrency() << "\n";
  char buffer[64];
  while (fgets(buffer, sizeof(buffer), stdin) != nullptr) {
    const std::string line = buffer;
    if (line == "start\n") {
      CALLGRIND_START_INSTRUMENTATION;
      CALLGRIND_ZERO_STATS;
      std::ofstream(port_file + ".on") << "1\n";  // AwaitFile() reads a number
    } else if (line == "stop\n") {
      CALLGRIND_STOP_INSTRUMENTATION;
      break;
    }
  }
  served->server->Shutdown();
  return 0;
}

// Waits (bounded, 60 s) for `path` to hold a line; its first number.
int AwaitFile(const std::string& path) {
  for (int i = 0; i < 6000; ++i) {
    std::ifstream in(path);
    int value = 0;
    if (in >> value) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// One server under callgrind: its instructions per measured call, and the
// answers the measured calls got; -1 on failure.
double Measure(const std::string& self, const std::string& dir, const std::string& api,
               const std::string& mode, int round, int calls, int warmup, std::string* what) {
  const std::string name = absl::StrCat(api, ".", mode, ".", round);
  const std::string port_file = absl::StrCat(dir, "/", name, ".port");
  const std::string out = absl::StrCat(dir, "/callgrind.", name);
  for (const std::string& stale : {port_file, port_file + ".on", out}) std::remove(stale.c_str());
  std::string env = absl::GetFlag(FLAGS_server_env);
  if (absl::GetFlag(FLAGS_one_cpu)) {
    const std::string::size_type slash = self.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : self.substr(0, slash);
    absl::StrAppend(&env, " LD_PRELOAD=", folder, "/libbench_one_cpu.so");
  }
  const std::string command = absl::StrCat(
      env, " valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=", out, " ", self,
      " --serve=", mode, " --api=", api, " --port_file=", port_file, " 2>", dir, "/", name,
      ".log");
  FILE* child = popen(command.c_str(), "w");
  if (child == nullptr) return -1;
  const int port = AwaitFile(port_file);
  if (port == 0) {
    pclose(child);
    return -1;
  }
  int cpus = 0;
  std::ifstream(port_file) >> cpus >> cpus;
  absl::StrAppend(what, "[server sees ", cpus, " CPU(s)] ");
  auto stub = resilience::bench::StubTo(port);
  // As a routed client's attempts: they ask for the load report.
  const bool ask = mode == "served_throttle_asked" || mode == "served_passthrough_report";
  for (int i = 0; i < warmup; ++i) resilience::bench::GetOnce(*stub, ask);
  std::fputs("start\n", child);
  std::fflush(child);
  AwaitFile(port_file + ".on");
  std::map<std::string, int> codes;
  for (int i = 0; i < calls; ++i) {
    const Answer a = resilience::bench::GetOnce(*stub, ask);
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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The tables of one API from the medians `ir` (mode -> instructions/call).
void PrintApi(const std::string& api, std::map<std::string, double>& ir,
              const std::map<std::string, std::vector<double>>& runs) {
  std::printf("\n### %s API (median of %zu)\n\n| server | instructions/call | runs |\n|---|---|---|\n",
              api.c_str(), runs.empty() ? size_t{0} : runs.begin()->second.size());
  for (const auto& [mode, v] : runs) {
    std::string each;
    for (double x : v) absl::StrAppend(&each, each.empty() ? "" : " ", absl::StrFormat("%.1fk", x / 1000));
    std::printf("| %s | %.1fk | %s |\n", mode.c_str(), ir[mode] / 1000, each.c_str());
  }
  auto ratio = [&](const char* a, const char* b, const char* target) {
    if (ir.count(a) == 0 || ir.count(b) == 0) return;
    std::printf("%s %s / %s = %.3f%s\n", api.c_str(), a, b, ir[a] / ir[b], target);
  };
  std::printf("\n");
  ratio("served_throttle", "served_passthrough", " (target <= 1.05)");
  ratio("served_passthrough", "served", " (what gRPC charges one interceptor)");
  ratio("served_throttle", "served", "");
  ratio("rejected", "floor", " (target <= 1.10)");
  ratio("rejected", "floor_passthrough", "");
  ratio("floor_passthrough", "floor", " (what gRPC charges one interceptor on a rejection)");
  ratio("served_throttle_no_report", "served_passthrough", "");
  ratio("served_passthrough_report", "served_passthrough",
        " (what gRPC charges for carrying the load report)");
  ratio("served_throttle_asked", "served_passthrough_report",
        " (a routed client's call, the report asked for: target <= 1.05 against the same trailer)");
  ratio("served_throttle_shadow", "served_throttle", " (target <= 1.02)");
  ratio("shadow_would_reject", "served_throttle", " (target <= 1.02)");
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const std::string mode = absl::GetFlag(FLAGS_serve); !mode.empty()) {
    return Child(absl::GetFlag(FLAGS_api), mode, absl::GetFlag(FLAGS_port_file));
  }
  const std::vector<std::string> apis = absl::GetFlag(FLAGS_apis);
  const std::vector<std::string> modes = absl::GetFlag(FLAGS_modes);
  for (const std::string& api : apis) {
    if (!resilience::bench::KnownServerApi(api)) {
      std::fprintf(stderr, "--apis: unknown API '%s' (sync or callback)\n", api.c_str());
      return 2;
    }
  }
  for (const std::string& mode : modes) {
    if (!resilience::bench::KnownServerMode(mode)) {
      std::fprintf(stderr, "--modes: unknown mode '%s' (bench/server_cost_servers.h)\n",
                   mode.c_str());
      return 2;
    }
  }
  std::string dir = absl::GetFlag(FLAGS_out_dir);
  if (dir.empty()) dir = absl::StrCat("/tmp/server_rejection_cost.", getpid());
  if (std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()) != 0) return 1;
  const int calls = absl::GetFlag(FLAGS_calls);
  const int warmup = absl::GetFlag(FLAGS_warmup_calls);
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  std::printf("server instructions per call, callgrind files in %s\n", dir.c_str());
  std::map<std::string, std::map<std::string, std::vector<double>>> runs;  // api -> mode -> runs
  for (int round = 0; round < repeats; ++round) {
    for (const std::string& api : apis) {
      for (const std::string& mode : modes) {
        std::string what;
        const double ir = Measure(argv[0], dir, api, mode, round, calls, warmup, &what);
        std::printf("%s %s round %d: %.1fk instructions/call (server, %d calls) %s\n", api.c_str(),
                    mode.c_str(), round, ir / 1000, calls, what.c_str());
        std::fflush(stdout);
        if (ir <= 0) return 1;
        runs[api][mode].push_back(ir);
      }
    }
  }
  for (const std::string& api : apis) {
    std::map<std::string, double> ir;
    for (const auto& [mode, v] : runs[api]) ir[mode] = Median(v);
    PrintApi(api, ir, runs[api]);
  }
  return 0;
}
