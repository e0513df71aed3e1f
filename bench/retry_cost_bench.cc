// What the client chain's retry costs the client, with the server in a
// process of its own (spawned here: examples/cache_service/cache_server), so
// that getrusage(RUSAGE_SELF) measures the client alone. Unary Get, closed
// loop, configurations interleaved round by round in one run:
//
//  1. Success path, for each --callers count: a bare channel (gRPC retries
//     off), gRPC's built-in retry (service config), our breaker, breaker +
//     timeout, and the full chain (retry + timeout + breaker). Per config:
//     calls/s, client CPU per call (the headline), context switches per
//     call, p50 / p99, and the ratios to bare and to builtin_retry.
//  2. Failures, at the largest --callers count: the server aborts
//     --failure_rate of the Gets with UNAVAILABLE; builtin_retry, our
//     retryPolicy alone (no perAttemptTimeout, timeout or breaker), the full
//     chain. CPU per *successful* call, success ratio, p99, ratios to
//     builtin_retry.
//  3. Rejections, at the largest --callers count: what a call costs that an
//     open breaker rejects locally, with the breaker alone and under the
//     full chain, against a real failed round trip (bare channel, a server
//     failing every Get).
//
// Ratios are medians of per-round ratios (both configs measured in the same
// round), with their min and max. --only=CONFIG --calls=N runs N calls of one
// success-path config from one caller, the loop between callgrind's
// START/STOP_INSTRUMENTATION markers when <valgrind/callgrind.h> was found
// at build time: bench/run_retry_cost_bench.sh counts instructions per call
// with it.
//
//   retry_cost_bench [--server=PATH] [--callers=4,16] [--seconds=2] [--rounds=5]
//                    [--failure_rate=0.2] [--json_file=PATH]
//   retry_cost_bench --only=CONFIG [--calls=3000] [--warmup_calls=200]
//
// --help prints the flags and exits 0; a bad flag exits 2 with one line; a
// server that cannot be started, or a check that fails, exits 1.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/hijack_once_interceptor.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/common/command_line.h"
#include "grpc_resilience/client.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

// The instruction count of --only's loop. Without the header the markers
// compile to nothing and --only still runs (and reports CPU per call).
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define RETRY_COST_BENCH_CALLGRIND 1
#else
#define RETRY_COST_BENCH_CALLGRIND 0
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define RUNNING_ON_VALGRIND 0
#endif

ABSL_FLAG(std::string, server, "",
          "The cache_server binary; default: examples/cache_service/cache_server of the build "
          "tree this binary is in.");
ABSL_FLAG(std::vector<std::string>, callers, std::vector<std::string>({"4", "16"}),
          "Closed-loop caller counts of the success-path comparison, comma-separated; the "
          "failure and rejection comparisons use the largest.");
ABSL_FLAG(double, seconds, 2, "Length of each round of each configuration.");
ABSL_FLAG(int, rounds, 5, "Rounds per configuration (interleaved).");
ABSL_FLAG(double, failure_rate, 0.2,
          "Share of Gets the server aborts with UNAVAILABLE in the failure comparison.");
ABSL_FLAG(std::string, json_file, "", "Also write the figures as JSON to this file.");
ABSL_FLAG(std::string, only, "",
          "Run only this success-path config (bare, builtin_retry, hijack_floor, breaker, "
          "breaker_timeout, full_chain) for --calls calls from one caller, e.g. under callgrind.");
ABSL_FLAG(int64_t, calls, 3000, "Calls of --only's measured loop.");
ABSL_FLAG(int64_t, warmup_calls, 200, "Calls of --only before the measured loop.");

namespace {

using Stub = cache::v1::CacheService::Stub;

constexpr char kGetMethod[] = "/cache.v1.CacheService/Get";
constexpr char kGetName[] = R"({"service": "cache.v1.CacheService", "method": "Get"})";
// Every Get's deadline: far beyond any policy timeout (2 s), so that the
// policy's timeout is the one armed.
constexpr auto kCallDeadline = std::chrono::seconds(5);
// Keys stored before the load; each caller cycles through them.
constexpr int kKeys = 100;
constexpr size_t kValueBytes = 100;
// Load before the first round of each channel: connection set-up and each
// method's first-call resolution stay out of the rounds.
constexpr absl::Duration kWarmUp = absl::Milliseconds(300);

// ---------------------------------------------------------------------------
// The server process.

// A directory for the server's policy files and logs, removed at the end.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    std::string pattern = (std::filesystem::temp_directory_path() / "retry_cost_bench.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::ErrnoToStatus(errno, "mkdtemp");
    }
    return TempDir(std::move(pattern));
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

  std::string File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::Status WriteFile(const std::string& path, absl::string_view text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ServerProcess
//
// A cache_server child process on a port it picks itself (--port=0); its
// stdout is a pipe we read the "listening on HOST:PORT" line from, its
// stderr goes to a log file (shown when it fails to start). Stopped by
// Stop() or the destructor: SIGTERM, then SIGKILL if it has not exited
// within 10 s. The child also gets SIGTERM should this process die first
// (PR_SET_PDEATHSIG), so no server outlives an interrupted run.
class ServerProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& binary,
                                                              const std::string& policy_path,
                                                              const std::string& log_path);
  ~ServerProcess() { Stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& address() const { return address_; }
  void Stop();

 private:
  ServerProcess(pid_t pid, int stdout_fd, std::string log_path)
      : pid_(pid), stdout_fd_(stdout_fd), log_path_(std::move(log_path)) {}
  absl::StatusOr<std::string> ReadListeningAddress(absl::Duration timeout);
  // The start failed: stop the child and describe why, with its log.
  absl::Status StartFailure(absl::string_view what);

  pid_t pid_;
  int stdout_fd_;
  std::string log_path_;
  std::string address_;
};

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary,
                                                                    const std::string& policy_path,
                                                                    const std::string& log_path) {
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cache_server not found or not executable: ", binary,
                     " (build target grpc_resilience_cache_server, or pass --server)"));
  }
  // Everything the child needs is prepared before fork(): between fork()
  // and exec() a child of this multithreaded process may only make
  // async-signal-safe calls.
  std::vector<std::string> args = {binary, "--port=0",
                                   // Nothing is in flight when we stop it.
                                   "--grace_period=0s"};
  if (!policy_path.empty()) args.push_back(absl::StrCat("--policy=", policy_path));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", log_path));
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(log_fd);
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::ErrnoToStatus(errno, "fork");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the parent died before prctl()
    dup2(out_pipe[1], STDOUT_FILENO);     // dup2 clears O_CLOEXEC on the copy
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  close(out_pipe[1]);
  std::unique_ptr<ServerProcess> server(new ServerProcess(pid, out_pipe[0], log_path));
  absl::StatusOr<std::string> address = server->ReadListeningAddress(absl::Seconds(10));
  if (!address.ok()) return server->StartFailure(address.status().message());
  server->address_ = *std::move(address);
  return server;
}

absl::StatusOr<std::string> ServerProcess::ReadListeningAddress(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (line.find('\n') == std::string::npos) {
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    pollfd p = {stdout_fd_, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return absl::DeadlineExceededError("no \"listening on\" line within 10 s");
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("it exited before printing \"listening on\"");
    line.append(buffer, static_cast<size_t>(n));
  }
  line.resize(line.find('\n'));
  absl::string_view address = line;
  if (!absl::ConsumePrefix(&address, "listening on ") || address.empty()) {
    return absl::InternalError(absl::StrCat("unexpected first line: \"", line, "\""));
  }
  return std::string(address);
}

absl::Status ServerProcess::StartFailure(absl::string_view what) {
  Stop();
  return absl::UnavailableError(
      absl::StrCat("cache_server did not start: ", what, "; its stderr:\n", ReadFile(log_path_)));
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      std::fprintf(stderr, "cache_server (pid %d) ignored SIGTERM for 10 s; killing it\n", pid_);
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  close(stdout_fd_);
}

// The server's policy: Get aborted with UNAVAILABLE for `abort_fraction` of
// the calls (Store is untouched, so the keys can be stored); "" (no policy
// file) when nothing is to fail.
absl::StatusOr<std::string> WriteFaultPolicy(const TempDir& dir, double abort_fraction) {
  if (abort_fraction <= 0) return std::string();
  const std::string path = dir.File(absl::StrCat("faults_", abort_fraction, ".json"));
  const std::string json = absl::StrFormat(
      R"({"methodConfig": [{"name": [%s], "faultInjection": {"abortCode": "UNAVAILABLE", )"
      R"("abortFraction": %.6f}}]})",
      kGetName, abort_fraction);
  if (absl::Status s = WriteFile(path, json); !s.ok()) return s;
  return path;
}

std::string DefaultServerPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "cache_server";
  // <build>/bench/retry_cost_bench -> <build>/examples/cache_service/cache_server
  return (self.parent_path().parent_path() / "examples" / "cache_service" / "cache_server")
      .string();
}

// ---------------------------------------------------------------------------
// The configurations and their channels.

// Our chain on Get: which of retry / timeout / breaker the policy has.
struct ChainSpec {
  bool retry = false;
  bool per_attempt_timeout = false;  // retryPolicy.perAttemptTimeout 0.2s
  bool timeout = false;              // timeout 2s
  std::string breaker;               // the "breaker" object; "" for none
};

struct ChannelSpec {
  enum class Kind { kBare, kBuiltinRetry, kHijackFloor, kHijackRejectFloor, kOurChain };
  std::string name;
  Kind kind;
  ChainSpec chain;  // kOurChain only
};

// The retry both retries do. gRPC 1.51's retry filter multiplies each
// backoff by a uniform draw in [0.8, 1.2] (RETRY_BACKOFF_JITTER 0.2, not
// the full jitter gRFC A6 describes): our "jitter": 0.2, added below.
constexpr char kBackoff[] = R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.2s", )"
                            R"("backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"])";
// The same with a per-attempt timeout, whose ends are retried too (without
// DEADLINE_EXCEEDED the loader warns, and strict mode refuses the policy).
constexpr char kBackoffWithTimeout[] =
    R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.2s", )"
    R"("backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"], )"
    R"("perAttemptTimeout": "0.2s")";

// An SRE breaker that does not drop at a 20% failure rate (it drops once
// requests exceed k x accepts).
constexpr char kSreBreaker[] = R"({"sre": {"k": 2}})";

// A breaker that, once tripped (5 failures in a row), stays open for the
// whole run.
constexpr char kLatchingBreaker[] =
    R"({"threeState": {"consecutiveFailures": 5, "openDuration": "3600s", )"
    R"("openDurationMultiplier": 1}})";

std::string BuiltInRetryServiceConfig() {
  return absl::StrCat(R"({"methodConfig": [{"name": [)", kGetName, R"(], "retryPolicy": {)",
                      kBackoff, "}}]}");
}

std::string ChainPolicyJson(const ChainSpec& chain) {
  std::vector<std::string> fields;
  if (chain.timeout) fields.push_back(R"("timeout": "2s")");
  if (chain.retry) {
    fields.push_back(
        absl::StrCat(R"("retryPolicy": {)",
                     chain.per_attempt_timeout ? kBackoffWithTimeout : kBackoff,
                     R"(, "jitter": 0.2})"));
  }
  if (!chain.breaker.empty()) fields.push_back(absl::StrCat(R"("breaker": )", chain.breaker));
  std::string json = absl::StrCat(R"({"methodConfig": [{"name": [)", kGetName, "], ",
                                  absl::StrJoin(fields, ", "), "}]");
  // gRPC's built-in retry has no retry budget unless the service config sets
  // retryThrottling; ours defaults to 10 tokens, which a steady 20% failure
  // rate spends. One that never runs dry keeps the comparison like for like.
  if (chain.retry)
    absl::StrAppend(&json, R"(, "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1})");
  return json + "}";
}

// One configuration's channel and stub, created once and used for every
// round.
struct Client {
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<resilience::ClientResilience> resilience;  // null: a plain channel
  std::unique_ptr<Stub> stub;
};

absl::StatusOr<Client> MakeClient(const ChannelSpec& spec, const std::string& target) {
  grpc::ChannelArguments args;
  // A connection of its own per configuration, as an application's channel
  // would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  Client client;
  client.name = spec.name;
  switch (spec.kind) {
    case ChannelSpec::Kind::kBare:
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
      client.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      break;
    case ChannelSpec::Kind::kBuiltinRetry:
      args.SetServiceConfigJSON(BuiltInRetryServiceConfig());
      client.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      break;
    case ChannelSpec::Kind::kHijackFloor:
    case ChannelSpec::Kind::kHijackRejectFloor: {
      // gRPC's retry filter stays on (for transparent retries), as on the
      // channels CreateResilientChannel() makes: the floor of our chain.
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> hijack;
      hijack.push_back(std::make_unique<resilience::bench::HijackOnceFactory>(
          /*reissue=*/spec.kind == ChannelSpec::Kind::kHijackFloor));
      client.channel = grpc::experimental::CreateCustomChannelWithInterceptors(
          target, grpc::InsecureChannelCredentials(), args, std::move(hijack));
      break;
    }
    case ChannelSpec::Kind::kOurChain: {
      resilience::PolicyLoadOptions load;
      load.strict = true;  // a field we got wrong should not be silently ignored
      absl::StatusOr<resilience::PolicySet> policies =
          resilience::PolicySet::FromJsonString(ChainPolicyJson(spec.chain), load);
      if (!policies.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(spec.name, ": ", policies.status().message()));
      }
      resilience::ResilientChannelOptions options;
      options.args = args;
      resilience::ResilientChannel channel = resilience::CreateResilientChannel(
          target, grpc::InsecureChannelCredentials(), *policies, std::move(options));
      for (const std::string& w : channel.warnings) {
        std::fprintf(stderr, "%s: warning: %s\n", spec.name.c_str(), w.c_str());
      }
      client.channel = std::move(channel.channel);
      client.resilience = std::move(channel.resilience);
      break;
    }
  }
  client.stub = cache::v1::CacheService::NewStub(client.channel);
  return client;
}

absl::StatusOr<std::vector<Client>> MakeClients(const std::vector<ChannelSpec>& specs,
                                                const std::string& target) {
  std::vector<Client> clients;
  for (const ChannelSpec& spec : specs) {
    absl::StatusOr<Client> client = MakeClient(spec, target);
    if (!client.ok()) return client.status();
    clients.push_back(*std::move(client));
  }
  return clients;
}

ChannelSpec Bare() { return {"bare", ChannelSpec::Kind::kBare, {}}; }
ChannelSpec BuiltinRetry() { return {"builtin_retry", ChannelSpec::Kind::kBuiltinRetry, {}}; }
// What any hijack-and-re-issue retry costs at least, on a channel set up as
// ours are (hijack_once_interceptor.h).
ChannelSpec HijackFloor() { return {"hijack_floor", ChannelSpec::Kind::kHijackFloor, {}}; }
// What any interceptor that answers a call itself costs at least.
ChannelSpec HijackRejectFloor() {
  return {"hijack_reject_floor", ChannelSpec::Kind::kHijackRejectFloor, {}};
}
ChannelSpec OurChain(std::string name, ChainSpec chain) {
  return {std::move(name), ChannelSpec::Kind::kOurChain, std::move(chain)};
}
ChainSpec BreakerOnly(std::string breaker) {
  ChainSpec chain;
  chain.breaker = std::move(breaker);
  return chain;
}
ChainSpec BreakerTimeout(std::string breaker) {
  ChainSpec chain = BreakerOnly(std::move(breaker));
  chain.timeout = true;
  return chain;
}
ChainSpec RetryOnly() {
  ChainSpec chain;
  chain.retry = true;
  return chain;
}
ChainSpec FullChain(std::string breaker) {
  ChainSpec chain = BreakerTimeout(std::move(breaker));
  chain.retry = true;
  chain.per_attempt_timeout = true;
  return chain;
}

std::vector<ChannelSpec> SuccessPathSpecs() {
  return {Bare(), BuiltinRetry(), HijackFloor(), OurChain("breaker", BreakerOnly(kSreBreaker)),
          OurChain("breaker_timeout", BreakerTimeout(kSreBreaker)),
          OurChain("full_chain", FullChain(kSreBreaker))};
}

// ---------------------------------------------------------------------------
// The load.

const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int i = 0; i < kKeys; ++i) k.push_back(absl::StrCat("key-", i));
    return k;
  }();
  return keys;
}

absl::Status StoreKeys(const std::string& target) {
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  const std::string value(kValueBytes, 'v');
  for (const std::string& key : Keys()) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    cache::v1::StoreReq request;
    request.set_key(key);
    request.set_value(value);
    cache::v1::StoreResp response;
    if (grpc::Status s = stub->Store(&context, request, &response); !s.ok()) {
      return absl::UnavailableError(absl::StrCat("Store ", key, ": ", s.error_message()));
    }
  }
  return absl::OkStatus();
}

enum class Outcome { kOk, kRejectedLocally, kFailed };

// One Get as an application makes it: sync stub, 5 s deadline.
Outcome GetOnce(Stub& stub, const std::string& key) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  const grpc::Status status = stub.Get(&context, request, &response);
  if (status.ok()) return Outcome::kOk;
  return resilience::RejectedLocally(context) ? Outcome::kRejectedLocally : Outcome::kFailed;
}

// What one caller thread saw in a round.
struct CallerTally {
  int64_t calls = 0;
  int64_t ok = 0;
  int64_t rejected_locally = 0;
  std::vector<int64_t> latency_ns;
};

void CallerLoop(Stub& stub, int caller, const absl::Notification& start,
                const std::atomic<bool>& stop, CallerTally& tally) {
  tally.latency_ns.reserve(1 << 16);
  size_t key = static_cast<size_t>(caller) * 7;  // callers start at different keys
  start.WaitForNotification();
  while (!stop.load(std::memory_order_relaxed)) {
    const auto begin = std::chrono::steady_clock::now();
    const Outcome outcome = GetOnce(stub, Keys()[key++ % Keys().size()]);
    tally.latency_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - begin)
                                   .count());
    ++tally.calls;
    if (outcome == Outcome::kOk) ++tally.ok;
    if (outcome == Outcome::kRejectedLocally) ++tally.rejected_locally;
  }
}

// This process's CPU time (every thread: callers and gRPC's own) and
// context switches. The server is another process, so none of it is here.
struct ProcessCounters {
  double cpu_seconds = 0;
  int64_t context_switches = 0;
};

ProcessCounters ReadProcessCounters() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return {seconds(usage.ru_utime) + seconds(usage.ru_stime),
          static_cast<int64_t>(usage.ru_nvcsw + usage.ru_nivcsw)};
}

// The figures of one round of one configuration.
struct RoundResult {
  int64_t calls = 0;
  int64_t ok = 0;
  int64_t rejected_locally = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  int64_t context_switches = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// Nearest rank: the smallest sample with at least q of them <= it.
double PercentileMs(const std::vector<int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted_ns.size()));
  return sorted_ns[std::clamp<size_t>(rank, 1, sorted_ns.size()) - 1] / 1e6;
}

// `callers` threads calling Get in a closed loop for `duration`. The
// process counters are read with the threads created and waiting, so their
// creation is not measured.
RoundResult RunLoad(Stub& stub, int callers, absl::Duration duration) {
  std::vector<CallerTally> tallies(static_cast<size_t>(callers));
  absl::Notification start;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < callers; ++i) {
    threads.emplace_back(CallerLoop, std::ref(stub), i, std::cref(start), std::cref(stop),
                         std::ref(tallies[static_cast<size_t>(i)]));
  }
  const ProcessCounters before = ReadProcessCounters();
  const absl::Time begin = absl::Now();
  start.Notify();
  absl::SleepFor(duration);
  stop.store(true);
  for (std::thread& t : threads) t.join();
  const absl::Duration elapsed = absl::Now() - begin;
  const ProcessCounters after = ReadProcessCounters();

  RoundResult r;
  std::vector<int64_t> latencies;
  for (const CallerTally& t : tallies) {
    r.calls += t.calls;
    r.ok += t.ok;
    r.rejected_locally += t.rejected_locally;
    latencies.insert(latencies.end(), t.latency_ns.begin(), t.latency_ns.end());
  }
  std::sort(latencies.begin(), latencies.end());
  r.seconds = absl::ToDoubleSeconds(elapsed);
  r.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
  r.context_switches = after.context_switches - before.context_switches;
  r.p50_ms = PercentileMs(latencies, 0.5);
  r.p99_ms = PercentileMs(latencies, 0.99);
  return r;
}

// What our chain counted on Get over the measured rounds (not the warm-up):
// the check that nothing was retried, rejected or cut short unseen.
struct ChainCounters {
  int64_t calls = 0;
  int64_t attempts = 0;
  int64_t retries = 0;
  int64_t rejected_by_breaker = 0;
  int64_t retry_budget_exhausted = 0;
  int64_t attempt_timeouts = 0;
};

ChainCounters ReadChainCounters(resilience::ClientResilience& resilience) {
  const resilience::ClientMethodStats s = resilience.Stats(kGetMethod);
  ChainCounters c;
  c.calls = s.calls;
  c.attempts = s.attempts;
  c.retries = s.retries;
  c.rejected_by_breaker = s.rejected_by_breaker;
  c.retry_budget_exhausted = s.retry_budget_exhausted;
  c.attempt_timeouts = s.attempt_timeouts;
  return c;
}

ChainCounters Minus(const ChainCounters& a, const ChainCounters& b) {
  return {a.calls - b.calls,
          a.attempts - b.attempts,
          a.retries - b.retries,
          a.rejected_by_breaker - b.rejected_by_breaker,
          a.retry_budget_exhausted - b.retry_budget_exhausted,
          a.attempt_timeouts - b.attempt_timeouts};
}

struct ConfigRounds {
  std::string name;
  std::vector<RoundResult> rounds;
  std::optional<ChainCounters> counters;  // our chain's channels only
};

struct LoadSettings {
  int callers = 4;
  absl::Duration round_length = absl::Seconds(2);
  int rounds = 5;
};

// Every client warmed up, then `rounds` rounds in which each client runs
// once. The first of each round rotates, so that no configuration always
// runs first (right after the warm-up or another phase's server stopped).
std::vector<ConfigRounds> RunInterleaved(std::vector<Client>& clients, const LoadSettings& load) {
  std::vector<ConfigRounds> results(clients.size());
  std::vector<ChainCounters> counters_before(clients.size());
  for (size_t i = 0; i < clients.size(); ++i) {
    results[i].name = clients[i].name;
    RunLoad(*clients[i].stub, load.callers, kWarmUp);
    if (clients[i].resilience) counters_before[i] = ReadChainCounters(*clients[i].resilience);
  }
  for (int round = 0; round < load.rounds; ++round) {
    for (size_t k = 0; k < clients.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(round)) % clients.size();
      results[i].rounds.push_back(RunLoad(*clients[i].stub, load.callers, load.round_length));
    }
  }
  for (size_t i = 0; i < clients.size(); ++i) {
    if (clients[i].resilience) {
      results[i].counters = Minus(ReadChainCounters(*clients[i].resilience), counters_before[i]);
    }
  }
  return results;
}

// ---------------------------------------------------------------------------
// Summaries: medians over rounds and per-round ratios.

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A figure of a round, as a table column shows it.
struct Metric {
  const char* key;     // in the JSON
  const char* header;  // in the table
  double (*value)(const RoundResult&);
  int precision;
  bool ratios;  // also show its ratios to the phase's reference configs
};

double CallsPerSecond(const RoundResult& r) { return r.calls / r.seconds; }
double CpuUsPerCall(const RoundResult& r) { return 1e6 * r.cpu_seconds / r.calls; }
double CpuUsPerOkCall(const RoundResult& r) { return 1e6 * r.cpu_seconds / r.ok; }
double SwitchesPerCall(const RoundResult& r) {
  return static_cast<double>(r.context_switches) / r.calls;
}
double SuccessRatio(const RoundResult& r) { return static_cast<double>(r.ok) / r.calls; }
double RejectedRatio(const RoundResult& r) {
  return static_cast<double>(r.rejected_locally) / r.calls;
}
double P50Ms(const RoundResult& r) { return r.p50_ms; }
double P99Ms(const RoundResult& r) { return r.p99_ms; }

std::vector<double> PerRound(const ConfigRounds& c, const Metric& m) {
  std::vector<double> values;
  for (const RoundResult& r : c.rounds) values.push_back(m.value(r));
  return values;
}

struct Ratio {
  double median, min, max;
};

// The ratio of `config` to `reference` in each round; its median and range.
Ratio RatioTo(const ConfigRounds& config, const ConfigRounds& reference, const Metric& m) {
  std::vector<double> ratios;
  for (size_t r = 0; r < config.rounds.size() && r < reference.rounds.size(); ++r) {
    ratios.push_back(m.value(config.rounds[r]) / m.value(reference.rounds[r]));
  }
  if (ratios.empty()) return {std::nan(""), std::nan(""), std::nan("")};
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return {Median(ratios), *lo, *hi};
}

// One comparison: its configurations' rounds, the figures shown, the
// configurations the ratios are taken to, and the checks' findings.
struct Phase {
  std::string key;
  std::string title;
  int callers = 0;
  std::vector<ConfigRounds> configs;
  std::vector<Metric> metrics;
  std::vector<std::string> references;
  std::vector<std::string> notes;

  const ConfigRounds& Config(absl::string_view name) const {
    for (const ConfigRounds& c : configs) {
      if (c.name == name) return c;
    }
    std::fprintf(stderr, "internal error: no config %s\n", std::string(name).c_str());
    std::abort();
  }
};

std::string FormatRatio(const Ratio& r) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", r.median, r.min, r.max);
}

void PrintPhase(const Phase& phase) {
  std::printf("\n### %s\n\n", phase.title.c_str());
  std::vector<std::string> header = {"config"};
  for (const Metric& m : phase.metrics) {
    header.push_back(m.header);
    if (!m.ratios) continue;
    for (const std::string& ref : phase.references) header.push_back(absl::StrCat("vs ", ref));
  }
  std::printf("| %s |\n", absl::StrJoin(header, " | ").c_str());
  std::string separator = "|";
  for (size_t i = 0; i < header.size(); ++i) separator += "---|";
  std::printf("%s\n", separator.c_str());
  for (const ConfigRounds& c : phase.configs) {
    std::vector<std::string> cells = {c.name};
    for (const Metric& m : phase.metrics) {
      cells.push_back(absl::StrFormat("%.*f", m.precision, Median(PerRound(c, m))));
      if (!m.ratios) continue;
      for (const std::string& ref : phase.references) {
        cells.push_back(FormatRatio(RatioTo(c, phase.Config(ref), m)));
      }
    }
    std::printf("| %s |\n", absl::StrJoin(cells, " | ").c_str());
  }
  std::printf("\n");
  for (const ConfigRounds& c : phase.configs) {
    if (!c.counters) continue;
    const ChainCounters& k = *c.counters;
    std::printf(
        "- %s, chain counters over the rounds: %lld calls, %lld attempts, %lld retries, %lld "
        "rejected by breaker, %lld retry budget exhausted, %lld attempt timeouts\n",
        c.name.c_str(), static_cast<long long>(k.calls), static_cast<long long>(k.attempts),
        static_cast<long long>(k.retries), static_cast<long long>(k.rejected_by_breaker),
        static_cast<long long>(k.retry_budget_exhausted),
        static_cast<long long>(k.attempt_timeouts));
  }
  for (const std::string& note : phase.notes) std::printf("- %s\n", note.c_str());
}

// ---------------------------------------------------------------------------
// JSON output.

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string RatioJson(const Ratio& r) {
  return absl::StrCat(R"({"median": )", JsonNumber(r.median), R"(, "min": )", JsonNumber(r.min),
                      R"(, "max": )", JsonNumber(r.max), "}");
}

std::string ConfigJson(const Phase& phase, const ConfigRounds& c) {
  std::vector<std::string> fields;
  for (const Metric& m : phase.metrics) {
    const std::vector<double> values = PerRound(c, m);
    std::vector<std::string> metric = {
        absl::StrCat(R"("median": )", JsonNumber(Median(values))),
        absl::StrCat(R"("per_round": [)",
                     absl::StrJoin(values, ", ",
                                   [](std::string* out, double v) { out->append(JsonNumber(v)); }),
                     "]")};
    if (m.ratios) {
      for (const std::string& ref : phase.references) {
        metric.push_back(absl::StrCat(JsonString("vs_" + ref), ": ",
                                      RatioJson(RatioTo(c, phase.Config(ref), m))));
      }
    }
    fields.push_back(absl::StrCat(JsonString(m.key), ": {", absl::StrJoin(metric, ", "), "}"));
  }
  int64_t calls = 0, ok = 0;
  for (const RoundResult& r : c.rounds) {
    calls += r.calls;
    ok += r.ok;
  }
  fields.push_back(absl::StrCat(R"("total_calls": )", calls, R"(, "total_ok": )", ok));
  if (c.counters) {
    const ChainCounters& k = *c.counters;
    fields.push_back(absl::StrCat(R"("chain_counters": {"calls": )", k.calls, R"(, "attempts": )",
                                  k.attempts, R"(, "retries": )", k.retries,
                                  R"(, "rejected_by_breaker": )", k.rejected_by_breaker,
                                  R"(, "retry_budget_exhausted": )", k.retry_budget_exhausted,
                                  R"(, "attempt_timeouts": )", k.attempt_timeouts, "}"));
  }
  return absl::StrCat(JsonString(c.name), ": {", absl::StrJoin(fields, ", "), "}");
}

std::string PhaseJson(const Phase& phase) {
  std::vector<std::string> configs;
  for (const ConfigRounds& c : phase.configs) configs.push_back(ConfigJson(phase, c));
  std::vector<std::string> notes;
  for (const std::string& n : phase.notes) notes.push_back(JsonString(n));
  return absl::StrCat(JsonString(phase.key), ": {\"title\": ", JsonString(phase.title),
                      ", \"callers\": ", phase.callers, ", \"configs\": {",
                      absl::StrJoin(configs, ", "), "}, \"notes\": [", absl::StrJoin(notes, ", "),
                      "]}");
}

absl::Status WriteJson(const std::string& path, const LoadSettings& load, double failure_rate,
                       const std::vector<Phase>& phases) {
  std::vector<std::string> parts;
  for (const Phase& p : phases) parts.push_back(PhaseJson(p));
  const std::string json = absl::StrCat(
      "{\"settings\": {\"seconds\": ", JsonNumber(absl::ToDoubleSeconds(load.round_length)),
      ", \"rounds\": ", load.rounds, ", \"failure_rate\": ", JsonNumber(failure_rate),
      ", \"call_deadline_s\": 5}, \"phases\": {", absl::StrJoin(parts, ", "), "}}\n");
  return WriteFile(path, json);
}

// ---------------------------------------------------------------------------
// The three comparisons.

struct Environment {
  std::string server_binary;
  const TempDir* temp_dir;
};

// A server whose Gets fail `abort_fraction` of the time, with the keys
// stored.
absl::StatusOr<std::unique_ptr<ServerProcess>> StartServer(const Environment& env,
                                                           absl::string_view name,
                                                           double abort_fraction) {
  absl::StatusOr<std::string> policy = WriteFaultPolicy(*env.temp_dir, abort_fraction);
  if (!policy.ok()) return policy.status();
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      env.server_binary, *policy, env.temp_dir->File(absl::StrCat("server_", name, ".log")));
  if (!server.ok()) return server.status();
  if (absl::Status s = StoreKeys((*server)->address()); !s.ok()) return s;
  return server;
}

const Metric kCpuPerCall = {"cpu_us_per_call", "CPU µs/call", CpuUsPerCall, 1, true};
const std::vector<Metric> kSuccessMetrics = {
    {"calls_per_s", "calls/s", CallsPerSecond, 0, true},
    kCpuPerCall,
    {"context_switches_per_call", "csw/call", SwitchesPerCall, 2, false},
    {"p50_ms", "p50 ms", P50Ms, 3, false},
    {"p99_ms", "p99 ms", P99Ms, 3, false},
};

// On the success path every call must succeed: a note when one did not.
void NoteFailedCalls(Phase& phase) {
  for (const ConfigRounds& c : phase.configs) {
    int64_t failed = 0;
    for (const RoundResult& r : c.rounds) failed += r.calls - r.ok;
    if (failed > 0) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name, ": ", failed,
                                         " calls failed on the success path"));
    }
  }
}

absl::StatusOr<Phase> RunSuccessPhase(const Environment& env, const LoadSettings& load) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "ok", 0);
  if (!server.ok()) return server.status();
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients(SuccessPathSpecs(), (*server)->address());
  if (!clients.ok()) return clients.status();
  Phase phase;
  phase.key = absl::StrCat("success_", load.callers, "_callers");
  phase.title =
      absl::StrCat("Success path: Get, ", load.callers,
                   " closed-loop callers, server in its own process, median of ", load.rounds,
                   " interleaved rounds of ", absl::FormatDuration(load.round_length));
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = kSuccessMetrics;
  phase.references = {"bare", "builtin_retry"};
  NoteFailedCalls(phase);
  return phase;
}

absl::StatusOr<Phase> RunFailurePhase(const Environment& env, const LoadSettings& load,
                                      double failure_rate) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "failing", failure_rate);
  if (!server.ok()) return server.status();
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients({BuiltinRetry(), OurChain("retry_only", RetryOnly()),
                   OurChain("full_chain", FullChain(kSreBreaker))},
                  (*server)->address());
  if (!clients.ok()) return clients.status();
  Phase phase;
  phase.key = "failure";
  phase.title = absl::StrFormat(
      "Failures: the server aborts %.0f%% of Gets with UNAVAILABLE, %d callers, median of %d "
      "interleaved rounds",
      100 * failure_rate, load.callers, load.rounds);
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = {
      {"cpu_us_per_ok_call", "CPU µs/successful call", CpuUsPerOkCall, 1, true},
      {"success_ratio", "success ratio", SuccessRatio, 4, false},
      {"calls_per_s", "calls/s", CallsPerSecond, 0, true},
      {"p50_ms", "p50 ms", P50Ms, 3, false},
      {"p99_ms", "p99 ms", P99Ms, 3, false},
  };
  phase.references = {"builtin_retry"};
  for (const ConfigRounds& c : phase.configs) {
    if (c.counters &&
        (c.counters->rejected_by_breaker > 0 || c.counters->retry_budget_exhausted > 0)) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name,
                                         ": calls were rejected by the breaker or not retried "
                                         "for the budget; the comparison is not like for like"));
    }
  }
  return phase;
}

// Sends Gets until `client`'s breaker rejects one locally.
absl::Status TripBreaker(Client& client) {
  for (int i = 0; i < 1000; ++i) {
    if (GetOnce(*client.stub, Keys()[0]) == Outcome::kRejectedLocally) return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat(client.name, ": the breaker did not open after 1000 failed calls"));
}

absl::StatusOr<Phase> RunRejectionPhase(const Environment& env, const LoadSettings& load) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "down", 1.0);
  if (!server.ok()) return server.status();
  ChannelSpec bare = Bare();
  bare.name = "bare_failed_rpc";
  absl::StatusOr<std::vector<Client>> clients =
      MakeClients({OurChain("open_breaker", BreakerOnly(kLatchingBreaker)),
                   OurChain("open_breaker_full_chain", FullChain(kLatchingBreaker)),
                   HijackRejectFloor(), bare},
                  (*server)->address());
  if (!clients.ok()) return clients.status();
  for (Client& c : *clients) {
    if (!c.resilience) continue;
    if (absl::Status s = TripBreaker(c); !s.ok()) return s;
  }
  Phase phase;
  phase.key = "rejection";
  phase.title = absl::StrFormat(
      "Rejections: an open breaker's local rejection vs a real failed round trip (server fails "
      "every Get), %d callers, median of %d interleaved rounds",
      load.callers, load.rounds);
  phase.callers = load.callers;
  phase.configs = RunInterleaved(*clients, load);
  phase.metrics = {
      kCpuPerCall,
      {"rejected_locally_ratio", "rejected locally", RejectedRatio, 4, false},
      {"calls_per_s", "calls/s", CallsPerSecond, 0, false},
      {"context_switches_per_call", "csw/call", SwitchesPerCall, 3, false},
      {"p99_ms", "p99 ms", P99Ms, 3, false},
  };
  phase.references = {"open_breaker", "bare_failed_rpc"};
  // Every call of the breaker channels must be a local rejection, of the bare
  // one a server failure; a retried rejection would show as retries.
  for (const ConfigRounds& c : phase.configs) {
    int64_t calls = 0, rejected = 0, ok = 0;
    for (const RoundResult& r : c.rounds) {
      calls += r.calls;
      rejected += r.rejected_locally;
      ok += r.ok;
    }
    const bool expect_rejections = c.counters.has_value();
    if (ok > 0 || rejected != (expect_rejections ? calls : 0) ||
        (c.counters && c.counters->retries > 0)) {
      phase.notes.push_back(absl::StrCat("CHECK FAILED: ", c.name, ": ", calls, " calls, ", ok,
                                         " OK, ", rejected, " rejected locally"));
    }
  }
  const ConfigRounds& a = phase.Config("open_breaker");
  const ConfigRounds& b = phase.Config("open_breaker_full_chain");
  const ConfigRounds& c = phase.Config("bare_failed_rpc");
  phase.notes.push_back(absl::StrCat("(b)/(a) full chain rejection / breaker rejection, CPU: ",
                                     FormatRatio(RatioTo(b, a, kCpuPerCall))));
  phase.notes.push_back(absl::StrCat("(a)/(c) breaker rejection / failed round trip, CPU: ",
                                     FormatRatio(RatioTo(a, c, kCpuPerCall))));
  return phase;
}

// ---------------------------------------------------------------------------
// --only: one configuration, one caller, a fixed number of calls.

absl::Status RunOnly(const Environment& env, absl::string_view name, int64_t warmup_calls,
                     int64_t calls) {
  std::optional<ChannelSpec> spec;
  for (const ChannelSpec& s : SuccessPathSpecs()) {
    if (s.name == name) spec = s;
  }
  if (!spec) return absl::InvalidArgumentError(absl::StrCat("no config ", name));
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = StartServer(env, "ok", 0);
  if (!server.ok()) return server.status();
  absl::StatusOr<Client> client = MakeClient(*spec, (*server)->address());
  if (!client.ok()) return client.status();
  Stub& stub = *client->stub;
  const std::vector<std::string>& keys = Keys();
  for (int64_t i = 0; i < warmup_calls; ++i) GetOnce(stub, keys[i % keys.size()]);

  int64_t ok = 0;
  const ProcessCounters before = ReadProcessCounters();
  const absl::Time begin = absl::Now();
  // Under callgrind --instr-atstart=no only this loop is instrumented: the
  // set-up above (and gRPC's start-up) runs uninstrumented and uncounted.
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
  for (int64_t i = 0; i < calls; ++i) {
    if (GetOnce(stub, keys[i % keys.size()]) == Outcome::kOk) ++ok;
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  const absl::Duration elapsed = absl::Now() - begin;
  const ProcessCounters after = ReadProcessCounters();

  std::printf(
      "only=%s calls=%lld ok=%lld cpu_us_per_call=%.2f wall_us_per_call=%.2f "
      "callgrind_markers=%s under_valgrind=%s\n",
      spec->name.c_str(), static_cast<long long>(calls), static_cast<long long>(ok),
      1e6 * (after.cpu_seconds - before.cpu_seconds) / calls,
      absl::ToDoubleMicroseconds(elapsed) / calls, RETRY_COST_BENCH_CALLGRIND ? "yes" : "no",
      RUNNING_ON_VALGRIND ? "yes" : "no");
  if (ok != calls) {
    return absl::InternalError(absl::StrCat(calls - ok, " of ", calls, " calls failed"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The command line.

constexpr char kUsage[] =
    "What the client chain's retry costs the client, server in its own process (spawned\n"
    "cache_server): unary Get, closed-loop callers, configurations interleaved round by\n"
    "round. Success path (bare, builtin_retry, hijack_floor, breaker, breaker_timeout,\n"
    "full_chain) for each --callers count; failures (--failure_rate of Gets aborted UNAVAILABLE:\n"
    "builtin_retry, retry_only, full_chain) and local rejections of an open breaker against\n"
    "a failed round trip, both at the largest --callers count. Client CPU per call from\n"
    "getrusage, ratios to bare and builtin_retry (median and range of per-round ratios).\n\n"
    "  retry_cost_bench [--server=PATH] [--callers=4,16] [--seconds=2] [--rounds=5]\n"
    "                   [--failure_rate=0.2] [--json_file=PATH]\n"
    "  retry_cost_bench --only=CONFIG [--calls=3000] [--warmup_calls=200]\n\n"
    "--only runs one success-path config from one caller, the measured loop between\n"
    "callgrind markers (valgrind --tool=callgrind --instr-atstart=no); see\n"
    "bench/run_retry_cost_bench.sh.";

// The --callers values, or a usage error message.
absl::StatusOr<std::vector<int>> ParseCallers() {
  std::vector<int> callers;
  for (const std::string& s : absl::GetFlag(FLAGS_callers)) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1 || n > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("--callers: each must be an integer in [1, 1024], got \"", s, "\""));
    }
    callers.push_back(n);
  }
  if (callers.empty()) return absl::InvalidArgumentError("--callers: must list at least one");
  return callers;
}

// A message for the first flag out of range; "" when all are fine.
std::string CheckFlags() {
  if (const double s = absl::GetFlag(FLAGS_seconds); !(s > 0 && s <= 3600)) {
    return absl::StrCat("--seconds: must be in (0, 3600], got ", s);
  }
  if (const int r = absl::GetFlag(FLAGS_rounds); r < 1 || r > 1000) {
    return absl::StrCat("--rounds: must be in [1, 1000], got ", r);
  }
  if (const double f = absl::GetFlag(FLAGS_failure_rate); !(f > 0 && f < 1)) {
    return absl::StrCat("--failure_rate: must be in (0, 1), got ", f);
  }
  if (const int64_t c = absl::GetFlag(FLAGS_calls); c < 1) {
    return absl::StrCat("--calls: must be >= 1, got ", c);
  }
  if (const int64_t w = absl::GetFlag(FLAGS_warmup_calls); w < 0) {
    return absl::StrCat("--warmup_calls: must be >= 0, got ", w);
  }
  if (const std::string only = absl::GetFlag(FLAGS_only); !only.empty()) {
    bool known = false;
    for (const ChannelSpec& s : SuccessPathSpecs()) known = known || s.name == only;
    if (!known) {
      return absl::StrCat(
          "--only: must be bare, builtin_retry, hijack_floor, breaker, breaker_timeout or "
          "full_chain, got \"",
          only, "\"");
    }
  }
  if (absl::StatusOr<std::vector<int>> c = ParseCallers(); !c.ok()) {
    return std::string(c.status().message());
  }
  return "";
}

// Prints a phase as soon as it is done (a long run shows progress) and keeps
// it for the JSON.
absl::Status PrintAndKeep(absl::StatusOr<Phase> phase, std::vector<Phase>& phases) {
  if (!phase.ok()) return phase.status();
  PrintPhase(*phase);
  std::fflush(stdout);
  phases.push_back(*std::move(phase));
  return absl::OkStatus();
}

absl::Status RunAll(const Environment& env) {
  const std::vector<int> callers = *ParseCallers();
  LoadSettings load;
  load.round_length = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  load.rounds = absl::GetFlag(FLAGS_rounds);
  const double failure_rate = absl::GetFlag(FLAGS_failure_rate);
  std::printf(
      "client CPU = this process's user+sys (getrusage) per call; the server is a\n"
      "separate process. Ratios: median [min, max] of per-round ratios.\n");
  std::vector<Phase> phases;
  for (int n : callers) {
    load.callers = n;
    if (absl::Status s = PrintAndKeep(RunSuccessPhase(env, load), phases); !s.ok()) return s;
  }
  // Failures and rejections at one caller count, which keeps the default
  // run within a few minutes: the largest, since the failure comparison is
  // held to a few hundred calls/s per caller by the retries' backoff, and at
  // such low rates a call's CPU depends a lot on how the scheduler wakes
  // threads (4 callers gave CPU ratios that changed direction between runs).
  load.callers = *std::max_element(callers.begin(), callers.end());
  if (absl::Status s = PrintAndKeep(RunFailurePhase(env, load, failure_rate), phases); !s.ok()) {
    return s;
  }
  if (absl::Status s = PrintAndKeep(RunRejectionPhase(env, load), phases); !s.ok()) return s;
  std::fflush(stdout);
  if (const std::string path = absl::GetFlag(FLAGS_json_file); !path.empty()) {
    if (absl::Status s = WriteJson(path, load, failure_rate, phases); !s.ok()) return s;
  }
  for (const Phase& p : phases) {
    for (const std::string& note : p.notes) {
      if (absl::StartsWith(note, "CHECK FAILED")) {
        return absl::InternalError("a check failed (see the notes above)");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  if (const std::string error = CheckFlags(); !error.empty()) {
    return example_cli::UsageError(error);
  }
  absl::StatusOr<TempDir> temp_dir = TempDir::Create();
  if (!temp_dir.ok()) {
    std::fprintf(stderr, "%s: %s\n", example_cli::ProgramName().c_str(),
                 temp_dir.status().ToString().c_str());
    return 1;
  }
  Environment env;
  env.server_binary = absl::GetFlag(FLAGS_server);
  if (env.server_binary.empty()) env.server_binary = DefaultServerPath();
  env.temp_dir = &*temp_dir;

  const std::string only = absl::GetFlag(FLAGS_only);
  const absl::Status status = only.empty() ? RunAll(env)
                                           : RunOnly(env, only, absl::GetFlag(FLAGS_warmup_calls),
                                                     absl::GetFlag(FLAGS_calls));
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", example_cli::ProgramName().c_str(),
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
