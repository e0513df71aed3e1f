// The fixture of the end-to-end tests of the cache binaries: a
// cache_server started as a subprocess on a free port and cache_client
// commands run against it, temporary policy files, and a server whose Gets
// are slow for the deadline tests.

#ifndef GRPC_RESILIENCE_TESTS_E2E_CACHE_CLI_TEST_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_E2E_CACHE_CLI_TEST_FIXTURE_H_

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace resilience {
namespace testing {

inline constexpr char kServer[] = CACHE_SERVER_PATH;
inline constexpr char kClient[] = CACHE_CLIENT_PATH;

// Writes `content` to a file of the test's temporary directory; returns its path.
inline std::string WriteTempFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

// A policy file with one field that loads with a warning (a healthCheckConfig
// without effect under gRPC's default pick_first).
constexpr char kPolicyWithWarning[] = R"({"healthCheckConfig": {},
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
    ASSERT_THAT(target_, ::testing::StartsWith("127.0.0.1:"));
  }

  CommandResult Client(std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {kClient, "--target=" + target_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, input, absl::Seconds(30));
  }

  std::unique_ptr<Subprocess> server_;
  std::string target_;
};

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

}  // namespace testing
}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_E2E_CACHE_CLI_TEST_FIXTURE_H_
