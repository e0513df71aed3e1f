// End-to-end: the built cache_server and cache_client binaries, run as a user
// would run them, as subprocesses talking over loopback; and the command-line
// conventions every binary follows (examples/common/command_line.h).

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::ListeningProcess;
using ::resilience::testing::StartListening;
using ::resilience::testing::RunCommand;
using ::resilience::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kServer[] = CACHE_SERVER_PATH;
constexpr char kClient[] = CACHE_CLIENT_PATH;

// Writes `content` to a file of the test's temporary directory; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

// A policy file with one field that loads with a warning (accepted for
// compatibility with gRPC service configs, not applied).
constexpr char kPolicyWithWarning[] = R"({"loadBalancingPolicy": "round_robin",
    "methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], "timeout": "10s"}]})";

class CacheCliTest : public ::testing::Test {
 protected:
  // Starts cache_server with `flags` and reads its address from the first line.
  void StartServer(std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), kServer);
    absl::StatusOr<ListeningProcess> server = StartListening(flags);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server->process);
    target_ = server->address;
    ASSERT_THAT(target_, StartsWith("127.0.0.1:"));
  }

  CommandResult Client(std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {kClient, "--target=" + target_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, input, absl::Seconds(30));
  }

  std::unique_ptr<Subprocess> server_;
  std::string target_;
};

// store, get and dump round trip through the two binaries.
TEST_F(CacheCliTest, StoreGetDumpRoundTrip) {
  StartServer();
  CommandResult r = Client({"store", "fruit", "apple"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Client({"store", "animal", "cat"}).exit_code, 0);
  r = Client({"get", "fruit"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "apple\n");
  r = Client({"dump"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "animal\tcat\nfruit\tapple\n");
}

// A key may be any bytes, not only UTF-8: store, get and dump work with one
// that is not valid UTF-8, dump and a NOT_FOUND message print it C-escaped,
// and neither binary logs anything about it (a log line per bad request
// would let any client flood the server's log).
TEST_F(CacheCliTest, KeysThatAreNotUtf8) {
  StartServer();
  const std::string key = "\xff\xfe";
  CommandResult r = Client({"store", key, "v"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = Client({"get", key});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "v\n");
  EXPECT_EQ(r.err, "");
  r = Client({"get", "a\xc3"});  // a truncated two-byte sequence
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "NOT_FOUND: key not found: \"a\\303\"\n");
  r = Client({"dump"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\\377\\376\tv\n");
  EXPECT_EQ(r.err, "");

  server_->Signal(SIGTERM);
  CommandResult server = server_->Finish("", absl::Seconds(15));
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_THAT(server.err, Not(HasSubstr("UTF-8")));
  const std::vector<std::string> lines = absl::StrSplit(server.err, '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    EXPECT_THAT(line, StartsWith("cache_server: ")) << server.err;
  }
}

// A second cache_server on a port in use refuses to start (SO_REUSEPORT
// would have let it share the first one's traffic): one line naming the
// port, a non-zero exit; the first server keeps serving.
TEST_F(CacheCliTest, RefusesAPortInUse) {
  StartServer();
  const std::string port = target_.substr(target_.rfind(':') + 1);
  CommandResult second = RunCommand({kServer, "--port=" + port}, "", absl::Seconds(30));
  EXPECT_NE(second.exit_code, 0);
  EXPECT_EQ(second.out, "");
  EXPECT_EQ(second.err, absl::StrCat("cache_server: port ", port,
                                     " on 127.0.0.1 is in use by another process\n"));
  EXPECT_EQ(Client({"store", "still", "here"}).exit_code, 0);
}

// A missing key exits 1 and prints the status by name with the key.
TEST_F(CacheCliTest, MissingKeyPrintsNotFound) {
  StartServer();
  CommandResult r = Client({"get", "ghost"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("NOT_FOUND: "));
  EXPECT_THAT(r.err, HasSubstr("ghost"));
}

// An empty key exits 1 with INVALID_ARGUMENT.
TEST_F(CacheCliTest, EmptyKeyIsInvalidArgument) {
  StartServer();
  CommandResult r = Client({"store", "", "v"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("INVALID_ARGUMENT: "));
}

// A value over --max_value_bytes is refused with its size and the limit.
TEST_F(CacheCliTest, OversizedValueIsRefused) {
  StartServer({"--max_value_bytes=16"});
  CommandResult r = Client({"store", "k", std::string(17, 'x')});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("INVALID_ARGUMENT: "));
  EXPECT_THAT(r.err, HasSubstr("17 bytes, over the limit of 16 bytes"));
  EXPECT_EQ(Client({"store", "k", std::string(16, 'x')}).exit_code, 0);
}

// Every byte value survives store (from stdin) and get --raw; dump escapes it.
TEST_F(CacheCliTest, BinaryValuesWithEveryByte) {
  StartServer();
  std::string value;
  for (int round = 0; round < 2; ++round) {
    for (int b = 0; b < 256; ++b) value.push_back(static_cast<char>(b));
  }
  CommandResult r = Client({"store", "bin", "-"}, value);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Client({"get", "--raw", "bin"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, value);
  r = Client({"dump"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("bin\t\\000\\001"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);  // escaped: one line
}

// load reports every call by status code and the latency percentiles.
TEST_F(CacheCliTest, LoadPrintsCountsAndPercentiles) {
  StartServer();
  CommandResult r = Client({"load", "--calls=200", "--concurrency=2", "--keys=10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("calls: 200"));
  EXPECT_THAT(r.out, HasSubstr("OK"));
  EXPECT_THAT(r.out, HasSubstr("p50"));
  EXPECT_THAT(r.out, HasSubstr("p99"));
  EXPECT_THAT(r.out, HasSubstr("max"));
}

// Usage errors exit 2 with one line; an unreachable server gives UNAVAILABLE.
TEST_F(CacheCliTest, UsageErrorsAndUnreachableServer) {
  target_ = "127.0.0.1:1";
  CommandResult r = Client({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"frobnicate\""));
  r = Client({"get"});
  EXPECT_EQ(r.exit_code, 2);
  r = Client({"--deadline=2s", "get", "k"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("UNAVAILABLE: "));
}

// Bad server flags: a one-line error and exit 2, before listening.
TEST(CacheServerFlagsTest, BadFlagsFailWithOneLine) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--port=70000"},
                                             {"--port=notaport"},
                                             {"--max_entries=0"},
                                             {"--no_such_flag"},
                                             {"--policy=/nonexistent/policy.json"},
                                             {"stray-argument"}}) {
    std::vector<std::string> argv = {kServer};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CommandResult r = RunCommand(argv, "", absl::Seconds(10));
    EXPECT_EQ(r.exit_code, 2) << flags[0] << ": " << r.err;
    EXPECT_FALSE(r.timed_out) << flags[0];
    EXPECT_EQ(r.out, "") << flags[0];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags[0] << ": " << r.err;
  }
}

// A bad policy file stops either binary before it serves or calls anything,
// with the file, the JSON path and the value in one line; the shipped
// policies.json is accepted.
TEST(CachePolicyFlagTest, BadPolicyFileIsRefusedBeforeServing) {
  const std::string path = ::testing::TempDir() + "/bad_policy.json";
  {
    std::ofstream(path) << R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 0}}]})";
  }
  const std::string expected = "methodConfig[0].retryPolicy.maxAttempts: must be in [1, 10], got 0";
  CommandResult server = RunCommand({kServer, "--policy=" + path}, "", absl::Seconds(10));
  EXPECT_EQ(server.exit_code, 2);
  EXPECT_EQ(server.out, "");  // never printed "listening on"
  EXPECT_THAT(server.err, HasSubstr(expected));
  EXPECT_THAT(server.err, HasSubstr(path));
  CommandResult client =
      RunCommand({kClient, "--target=127.0.0.1:1", "--policy=" + path, "get", "k"}, "",
                 absl::Seconds(10));
  EXPECT_EQ(client.exit_code, 2);
  EXPECT_THAT(client.err, HasSubstr(expected));
  std::remove(path.c_str());

  absl::StatusOr<std::unique_ptr<Subprocess>> good =
      Subprocess::Start({kServer, std::string("--policy=") + SHIPPED_POLICY_PATH});
  ASSERT_TRUE(good.ok());
  std::optional<std::string> line = (*good)->ReadLine(absl::Seconds(10));
  ASSERT_TRUE(line.has_value());
  EXPECT_THAT(*line, StartsWith("listening on "));
}

// SIGTERM lets a call in flight finish, then the server exits 0.
TEST_F(CacheCliTest, GracefulShutdownOnSigterm) {
  StartServer({"--max_value_bytes=65536"});
  // 64 entries of 64 KiB, 4 MiB in all: the Dump is under way (the client
  // has its first item, the rest is in flight) when SIGTERM arrives.
  const std::string big(65536, 'x');
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(Client({"store", absl::StrCat("k", 100 + i), "-"}, big).exit_code, 0);
  }
  auto channel = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  auto stub = cache::v1::CacheService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  auto reader = stub->Dump(&context, cache::v1::DumpReq());
  cache::v1::DumpItem item;
  ASSERT_TRUE(reader->Read(&item));
  server_->Signal(SIGTERM);
  int items = 1;
  while (reader->Read(&item)) ++items;
  grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(items, 64);

  CommandResult r = server_->Finish("", absl::Seconds(15));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("SIGTERM received"));
  // New calls are refused once it is gone.
  EXPECT_EQ(Client({"--deadline=2s", "get", "k100"}).exit_code, 1);
}

// SIGTERM keeps its grace period with calls held in a 20 s injected delay:
// the server is gone within about the grace period, and the held call is
// answered (not run) instead of keeping the process alive for the delay.
TEST_F(CacheCliTest, SigtermKeepsTheGracePeriodDuringAnInjectedDelay) {
  const std::string policy = ::testing::TempDir() + "/delay_policy.json";
  {
    std::ofstream out(policy);
    out << R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
               "faultInjection": {"delay": "20s"}}]})";
  }
  StartServer({"--policy=" + policy, "--grace_period=1s"});
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  cache::v1::GetReq request;
  request.set_key("k");
  cache::v1::GetResp response;
  absl::Notification done;
  grpc::Status status;
  stub->async()->Get(&context, &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  absl::SleepFor(absl::Milliseconds(300));  // the call is in its delay
  const absl::Time start = absl::Now();
  server_->Signal(SIGTERM);
  CommandResult r = server_->Finish("", absl::Seconds(15));
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, absl::Seconds(4));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

// --- Command-line conventions of every binary -----------------------------

struct Binary {
  std::string path;
  // A flag with a value the binary refuses when parsing it.
  std::string bad_value;
};

std::vector<Binary> AllBinaries() {
  std::vector<Binary> binaries = {
      {kServer, "--port=notaport"},
      {kClient, "--deadline=soon"},
      {CACHE_DEMO_PATH, ""},  // no flags of its own
      {GOODPUT_EXPERIMENT_PATH, "--seconds=abc"},
  };
#ifdef CLIENT_CHAIN_BENCH_PATH
  binaries.push_back({CLIENT_CHAIN_BENCH_PATH, "--rounds=many"});
  binaries.push_back({SERVER_THROTTLE_BENCH_PATH, "--seconds=abc"});
  binaries.push_back({BREAKER_BENCH_PATH, "--benchmark_min_time=abc"});
#endif
  return binaries;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// --help (and -h, --helpfull) prints the usage on stdout and exits 0, without
// doing the program's work (the demo, an experiment, a benchmark).
TEST(CommandLineTest, HelpExitsZero) {
  for (const Binary& binary : AllBinaries()) {
    for (const char* help : {"--help", "-h", "--helpfull"}) {
      SCOPED_TRACE(absl::StrCat(BaseName(binary.path), " ", help));
      CommandResult r = RunCommand({binary.path, help}, "", absl::Seconds(20));
      EXPECT_FALSE(r.timed_out);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
      EXPECT_THAT(r.out, HasSubstr(BaseName(binary.path) == "breaker_bench" ? "--benchmark_filter"
                                                                           : "Flags:"));
    }
  }
  // The program's own flags are listed with their help; --helpfull adds Abseil's.
  CommandResult r = RunCommand({kClient, "--help"}, "", absl::Seconds(20));
  EXPECT_THAT(r.out, HasSubstr("--deadline"));
  EXPECT_THAT(r.out, HasSubstr("--strict_policies"));
  EXPECT_THAT(r.out, Not(HasSubstr("  --flagfile (default")));
  r = RunCommand({kClient, "--helpfull"}, "", absl::Seconds(20));
  EXPECT_THAT(r.out, HasSubstr("  --flagfile (default"));
  r = RunCommand({kServer, "--help"}, "", absl::Seconds(20));
  EXPECT_THAT(r.out, HasSubstr("--strict_policies"));
}

// An unknown flag, a bad value, a missing value, a stray argument: one line
// on stderr, "PROGRAM: ..." naming the flag, nothing on stdout, exit 2.
TEST(CommandLineTest, BadFlagsExitTwoWithOneLineNamingTheFlag) {
  for (const Binary& binary : AllBinaries()) {
    const std::string name = BaseName(binary.path);
    std::vector<std::pair<std::string, std::string>> cases = {
        {"--no_such_flag", "--no_such_flag"},
        {"--no_such_flag=1", "--no_such_flag"},
    };
    if (!binary.bad_value.empty()) {
      cases.push_back({binary.bad_value, binary.bad_value.substr(0, binary.bad_value.find('='))});
    }
    if (name != "cache_client") cases.push_back({"stray-argument", "stray-argument"});
    for (const auto& [arg, named] : cases) {
      SCOPED_TRACE(absl::StrCat(name, " ", arg));
      CommandResult r = RunCommand({binary.path, arg}, "", absl::Seconds(20));
      EXPECT_FALSE(r.timed_out);
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_THAT(r.err, StartsWith(name + ": "));
      EXPECT_THAT(r.err, HasSubstr(named));
    }
  }
  // A flag that needs a value, given none; a bool flag's value; the "no" form
  // of a flag that is not a bool.
  for (const auto& [arg, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--target", "cache_client: --target: missing value\n"},
           {"--raw=maybe", "cache_client: --raw: invalid value \"maybe\"\n"},
           {"--nodeadline", "cache_client: --nodeadline: --deadline is not a boolean flag\n"},
           {"--deadline=0s", "cache_client: --deadline: must be > 0, got 0\n"}}) {
    CommandResult r = RunCommand({kClient, "get", "k", arg}, "", absl::Seconds(20));
    EXPECT_EQ(r.exit_code, 2) << arg;
    EXPECT_EQ(r.err, expected);
  }
  // Flags and arguments mix, "--" ends the flags, --undefok lets a flag pass.
  CommandResult r = RunCommand({kServer, "--undefok=no_such_flag", "--no_such_flag", "--help"},
                               "", absl::Seconds(20));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({kClient, "--target=127.0.0.1:1", "--deadline=1s", "get", "--", "--raw"}, "",
                 absl::Seconds(20));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // calls, with key "--raw"
  EXPECT_THAT(r.err, StartsWith("UNAVAILABLE: "));
}

// --- Deadlines: the policy's `timeout` and --deadline ------------------------

class CacheCliDeadlineTest : public CacheCliTest {
 protected:
  // A server whose Gets take 3 s (an injected delay).
  void StartSlowServer() {
    StartServer({"--policy=" + WriteTempFile("slow_get_policy.json", R"({"methodConfig": [
        {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
         "faultInjection": {"delay": "3s"}}]})")});
  }
  // A client policy file giving Get `timeout`.
  static std::string ClientPolicy(const std::string& timeout) {
    return WriteTempFile(absl::StrCat("get_timeout_", timeout, ".json"),
                         absl::StrCat(R"({"methodConfig": [{"name": [{"service":
                             "cache.v1.CacheService", "method": "Get"}], "timeout": ")",
                                      timeout, R"("}]})"));
  }
  // Runs `get k` with `flags`; the time it took.
  absl::Duration TimedGet(std::vector<std::string> flags, CommandResult* result) {
    flags.insert(flags.end(), {"get", "k"});
    const absl::Time start = absl::Now();
    *result = Client(flags);
    return absl::Now() - start;
  }
};

// Without --deadline the policy's `timeout` ends the call: 300 ms, not the
// 5 s --deadline used to default to, nor the server's 3 s.
TEST_F(CacheCliDeadlineTest, PolicyTimeoutBoundsTheCallWithoutDeadlineFlag) {
  StartSlowServer();
  CommandResult r;
  const absl::Duration took = TimedGet({"--policy=" + ClientPolicy("0.3s")}, &r);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(2));
}

// --deadline, when given, bounds the call too: a shorter one ends it before
// the policy's `timeout`; a longer one does not extend the policy's
// `timeout` (the earlier of the two applies, as in gRPC).
TEST_F(CacheCliDeadlineTest, DeadlineFlagAndPolicyTimeoutTheEarlierApplies) {
  StartSlowServer();
  CommandResult r;
  absl::Duration took = TimedGet({"--policy=" + ClientPolicy("20s"), "--deadline=0.3s"}, &r);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(2));

  took = TimedGet({"--policy=" + ClientPolicy("0.3s"), "--deadline=20s"}, &r);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_LT(took, absl::Seconds(2));

  // No policy: --deadline alone.
  took = TimedGet({"--deadline=0.3s"}, &r);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_LT(took, absl::Seconds(2));
}

// --- Policy warnings and --strict_policies ----------------------------------

// Both binaries print each warning of the policy file on stderr, one line
// "PROGRAM: warning: ..." naming the field, and go on.
TEST_F(CacheCliTest, PolicyWarningsArePrinted) {
  const std::string policy = WriteTempFile("warning_policy.json", kPolicyWithWarning);
  StartServer({"--policy=" + policy});
  CommandResult r = Client({"--policy=" + policy, "store", "k", "v"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, StartsWith("cache_client: warning: loadBalancingPolicy"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  server_->Signal(SIGTERM);
  CommandResult server = server_->Finish("", absl::Seconds(15));
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_THAT(server.err, StartsWith("cache_server: warning: loadBalancingPolicy"));
}

// `deadline` is a deprecated alias of `timeout`: it loads with a warning
// naming it, and bounds the call as `timeout` does.
TEST_F(CacheCliDeadlineTest, DeprecatedDeadlineFieldWarnsAndActsAsTimeout) {
  StartSlowServer();
  const std::string policy = WriteTempFile("deprecated_deadline.json", R"({"methodConfig": [
      {"name": [{"service": "cache.v1.CacheService", "method": "Get"}], "deadline": "0.3s"}]})");
  CommandResult r;
  const absl::Duration took = TimedGet({"--policy=" + policy}, &r);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_THAT(lines[0], StartsWith("cache_client: warning: "));
  EXPECT_THAT(lines[0], HasSubstr("deadline"));
  EXPECT_THAT(lines[1], StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_LT(took, absl::Seconds(2));
  EXPECT_EQ(Client({"--policy=" + policy, "--strict_policies", "get", "k"}).exit_code, 2);
}

// --strict_policies turns a warning into an error: exit 2 naming the field,
// before serving or calling; without it the same file loads.
TEST(CachePolicyFlagTest, StrictPoliciesRefusesAFileWithWarnings) {
  const std::string policy = WriteTempFile("strict_policy.json", kPolicyWithWarning);
  CommandResult server =
      RunCommand({kServer, "--policy=" + policy, "--strict_policies"}, "", absl::Seconds(10));
  EXPECT_FALSE(server.timed_out);
  EXPECT_EQ(server.exit_code, 2);
  EXPECT_EQ(server.out, "");  // never printed "listening on"
  EXPECT_THAT(server.err, StartsWith("cache_server: "));
  EXPECT_THAT(server.err, HasSubstr("loadBalancingPolicy"));

  CommandResult client = RunCommand(
      {kClient, "--target=127.0.0.1:1", "--policy=" + policy, "--strict_policies", "get", "k"},
      "", absl::Seconds(10));
  EXPECT_EQ(client.exit_code, 2);
  EXPECT_THAT(client.err, StartsWith("cache_client: "));
  EXPECT_THAT(client.err, HasSubstr("loadBalancingPolicy"));
  EXPECT_THAT(client.err, Not(HasSubstr("UNAVAILABLE")));  // no call was made

  // Without --strict_policies: a warning, and the call is made.
  client = RunCommand({kClient, "--target=127.0.0.1:1", "--deadline=2s", "--policy=" + policy,
                       "get", "k"},
                      "", absl::Seconds(10));
  EXPECT_EQ(client.exit_code, 1);
  EXPECT_THAT(client.err, HasSubstr("UNAVAILABLE"));
}

// The shipped policies.json loads with no warning, so --strict_policies
// accepts it on both sides, and it works.
TEST_F(CacheCliTest, ShippedPoliciesLoadStrictly) {
  const std::string shipped = std::string("--policy=") + SHIPPED_POLICY_PATH;
  StartServer({shipped, "--strict_policies"});
  CommandResult r = Client({shipped, "--strict_policies", "store", "fruit", "apple"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = Client({shipped, "--strict_policies", "get", "fruit"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "apple\n");
  EXPECT_EQ(r.err, "");

  server_->Signal(SIGTERM);
  CommandResult server = server_->Finish("", absl::Seconds(15));
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_THAT(server.err, Not(HasSubstr("warning")));
}

// A misspelt method name in a retried entry is one warning, printed once,
// in the loader's words ("did you mean"), not also as a second, confusing
// warning about streams of a method "not linked into this process".
TEST(CachePolicyFlagTest, MisspeltMethodNameIsOneWarningPrintedOnce) {
  const std::string policy = WriteTempFile("typo_policy.json", R"({"methodConfig": [
      {"name": [{"service": "cache.v1.CacheService", "method": "Stor"}],
       "retryPolicy": {"maxAttempts": 3}}]})");
  const CommandResult r = RunCommand(
      {kClient, "--target=127.0.0.1:1", "--deadline=2s", "--policy=" + policy, "get", "k"}, "",
      absl::Seconds(10));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the call fails: nothing listens there
  std::vector<std::string> warnings;
  for (absl::string_view line : absl::StrSplit(r.err, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "cache_client: warning: ")) warnings.emplace_back(line);
  }
  EXPECT_THAT(warnings, ::testing::ElementsAre(
                            "cache_client: warning: methodConfig[0].name[0]: method \"Stor\" is "
                            "not in service cache.v1.CacheService (did you mean "
                            "\"/cache.v1.CacheService/Store\"?)"))
      << r.err;
}

}  // namespace
