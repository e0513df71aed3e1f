// End-to-end: the cache binaries with policy files: bad files refused before
// serving, the policy's `timeout` against --deadline, warnings printed,
// --strict_policies, and cache_client's --service_config (gRPC alone).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cache_cli_test_fixture.h"
#include "tests/testing/loopback_socket.h"
#include "tests/testing/subprocess.h"

namespace {

using ::resilience::testing::CacheCliDeadlineTest;
using ::resilience::testing::CacheCliTest;
using ::resilience::testing::CommandResult;
using ::resilience::testing::kClient;
using ::resilience::testing::kPolicyWithWarning;
using ::resilience::testing::kServer;
using ::resilience::testing::ListeningProcess;
using ::resilience::testing::RunCommand;
using ::resilience::testing::StartListening;
using ::resilience::testing::Subprocess;
using ::resilience::testing::WriteTempFile;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A bad policy file stops either binary before it serves or calls anything,
// with the file, the JSON path and the value in one line; the shipped
// policies.json is accepted.
TEST(CachePolicyFlagTest, BadPolicyFileIsRefusedBeforeServing) {
  const std::string path = ::testing::TempDir() + "/bad_policy.json";
  {
    std::ofstream(path)
        << R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 0}}]})";
  }
  const std::string expected = "methodConfig[0].retryPolicy.maxAttempts: must be in [1, 10], got 0";
  CommandResult server = RunCommand({kServer, "--policy=" + path}, "", absl::Seconds(10));
  EXPECT_EQ(server.exit_code, 2);
  EXPECT_EQ(server.out, "");  // never printed "listening on"
  EXPECT_THAT(server.err, HasSubstr(expected));
  EXPECT_THAT(server.err, HasSubstr(path));
  CommandResult client = RunCommand(
      {kClient, "--target=127.0.0.1:1", "--policy=" + path, "get", "k"}, "", absl::Seconds(10));
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

// --- Deadlines: the policy's `timeout` and --deadline ------------------------

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
  EXPECT_THAT(r.err, StartsWith("cache_client: warning: healthCheckConfig"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  server_->Signal(SIGTERM);
  CommandResult server = server_->Finish("", absl::Seconds(15));
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_THAT(server.err, StartsWith("cache_server: warning: healthCheckConfig"));
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
  EXPECT_THAT(server.err, HasSubstr("healthCheckConfig"));

  CommandResult client = RunCommand(
      {kClient, "--target=127.0.0.1:1", "--policy=" + policy, "--strict_policies", "get", "k"}, "",
      absl::Seconds(10));
  EXPECT_EQ(client.exit_code, 2);
  EXPECT_THAT(client.err, StartsWith("cache_client: "));
  EXPECT_THAT(client.err, HasSubstr("healthCheckConfig"));
  EXPECT_THAT(client.err, Not(HasSubstr("UNAVAILABLE")));  // no call was made

  // Without --strict_policies: a warning, and the call is made.
  client = RunCommand(
      {kClient, "--target=127.0.0.1:1", "--deadline=2s", "--policy=" + policy, "get", "k"}, "",
      absl::Seconds(10));
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

namespace service_config {

// A free loopback port (bound, then released).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  bind(fd, reinterpret_cast<sockaddr*>(&address), size);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  close(fd);
  return ntohs(address.sin_port);
}

// The body of GET /metrics on 127.0.0.1:port ("" when it cannot connect).
std::string Scrape(int port) {
  const int fd = ::resilience::testing::ConnectLoopback(port);
  if (fd < 0) return "";
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) answer.append(buffer, n);
  close(fd);
  return answer;
}

// --service_config: a plain gRPC channel. gRPC's own retry makes three
// attempts of a Get the server fails, and the server's /metrics counts them
// and the two retries among them; `load` says the library counted nothing.
TEST_F(CacheCliTest, ServiceConfigIsGrpcsOwnChannelAndTheServerCountsItsRetries) {
  const int metrics_port = FreePort();
  StartServer({"--metrics_port=" + std::to_string(metrics_port),
               "--policy=" + WriteTempFile("failing_get.json", R"({"methodConfig": [
                   {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                    "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}}]})")});
  const std::string config = WriteTempFile("grpc_retry.json", R"({
      "loadBalancingConfig": [{"round_robin": {}}],
      "methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                        "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  CommandResult r = Client({"--service_config=" + config, "--deadline=10s", "get", "k"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("UNAVAILABLE: "));
  const std::string metrics = Scrape(metrics_port);
  EXPECT_THAT(metrics, HasSubstr("cache_server_attempts_received_total{grpc_method=\""
                                 "/cache.v1.CacheService/Get\"} 3\n"));
  EXPECT_THAT(metrics, HasSubstr("cache_server_retries_received_total{grpc_method=\""
                                 "/cache.v1.CacheService/Get\"} 2\n"));
  r = Client({"--service_config=" + config, "load", "--calls=20", "--get_fraction=0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("calls: 20"));
  EXPECT_THAT(r.out, HasSubstr("client: gRPC's own channel (--service_config)"));
}

TEST_F(CacheCliTest, ServiceConfigRefusesWhatOnlyTheLibraryDoes) {
  target_ = "127.0.0.1:1";
  const std::string config = WriteTempFile("plain.json", R"({"methodConfig": []})");
  CommandResult r = Client({"--service_config=" + config,
                            "--policy=" + WriteTempFile("p.json", "{}"), "get", "k"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--service_config: not with --policy"));
  r = Client({"--service_config=" + config, "--metrics_port=9", "load", "--calls=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not with --metrics_port"));
  r = Client({"--service_config=" + config, "--strict_policies", "get", "k"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--strict_policies: only with --policy"));
  r = Client({"--service_config=" + ::testing::TempDir() + "/absent.json", "get", "k"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--service_config: cannot open"));
}

}  // namespace service_config
