// End-to-end: the command-line conventions every binary follows
// (examples/common/command_line.h): --help, and one line naming the flag for
// every mistake.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cache_cli_test_fixture.h"
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
  CommandResult r = RunCommand({kServer, "--undefok=no_such_flag", "--no_such_flag", "--help"}, "",
                               absl::Seconds(20));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({kClient, "--target=127.0.0.1:1", "--deadline=1s", "get", "--", "--raw"}, "",
                 absl::Seconds(20));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // calls, with key "--raw"
  EXPECT_THAT(r.err, StartsWith("UNAVAILABLE: "));
}

}  // namespace
