// The README's replicated service, as written: the policy file of its
// "A replicated service" section (the ```json block) loads with no warning,
// also in strict mode and as a channel to three replicas, and its commands
// (the ```sh block: three cache_server processes, then cache_client load
// with that file over one ipv4: channel to all three) serve every call.
// What the test changes in the commands: the binaries' paths, free ports
// (--port=0) instead of 50051-50053, and a 2 s load instead of 10 s.
// The README's C++ snippets are compiled by scripts/check_readme_snippets.sh.

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc_resilience/client.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::ListeningProcess;
using ::resilience::testing::RunCommand;
using ::resilience::testing::StartListening;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kSection[] = "## A replicated service";
constexpr char kServerCommand[] = "build/examples/cache_service/cache_server";
constexpr char kClientCommand[] = "build/examples/cache_service/cache_client";

std::string ReadReadme() {
  std::ifstream in(README_PATH);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The README's section under kSection, up to the next "## " heading; empty
// when there is none.
std::string Section(const std::string& readme) {
  const size_t start = readme.find(absl::StrCat("\n", kSection, "\n"));
  if (start == std::string::npos) return "";
  const size_t end = readme.find("\n## ", start + 1);
  return readme.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The first block fenced as ```<language> in `section`; empty when none.
std::string Block(const std::string& section, const std::string& language) {
  const std::string fence = absl::StrCat("\n```", language, "\n");
  const size_t start = section.find(fence);
  if (start == std::string::npos) return "";
  const size_t body = start + fence.size();
  const size_t end = section.find("\n```", body - 1);
  return end == std::string::npos ? "" : section.substr(body, end - body + 1);
}

class ReadmeReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string section = Section(ReadReadme());
    ASSERT_FALSE(section.empty()) << README_PATH << " has no section '" << kSection << "'";
    policy_ = Block(section, "json");
    commands_ = Block(section, "sh");
    ASSERT_FALSE(policy_.empty()) << "no ```json block under '" << kSection << "'";
    ASSERT_FALSE(commands_.empty()) << "no ```sh block under '" << kSection << "'";
  }

  std::string policy_;
  std::string commands_;
};

TEST_F(ReadmeReplicasTest, ThePolicyFileLoadsWithoutWarnings) {
  // The file's names are checked against the services linked into the
  // process: this one links the cache service, as cache_client does.
  ASSERT_NE(cache::v1::GetReq::descriptor(), nullptr);
  absl::StatusOr<resilience::PolicySet> policies = resilience::PolicySet::FromJsonString(policy_);
  ASSERT_TRUE(policies.ok()) << policies.status();
  EXPECT_THAT(policies->warnings(), IsEmpty());
  resilience::PolicySet::LoadOptions strict;
  strict.strict = true;
  EXPECT_TRUE(resilience::PolicySet::FromJsonString(policy_, strict).ok());
  // What the channel gets (load balancing, health, outlier detection)
  // draws no warning either.
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      "ipv4:127.0.0.1:50051,127.0.0.1:50052,127.0.0.1:50053", grpc::InsecureChannelCredentials(),
      *policies);
  EXPECT_THAT(channel.warnings, IsEmpty());
}

TEST_F(ReadmeReplicasTest, TheCommandsServeEveryCall) {
  // The commands, a line each once continuation lines are joined.
  const std::vector<std::string> lines =
      absl::StrSplit(absl::StrReplaceAll(commands_, {{"\\\n", " "}}), '\n', absl::SkipEmpty());
  std::vector<std::string> server_args;
  std::vector<std::string> client_args;
  int servers = 0;
  for (const std::string& line : lines) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] == kServerCommand) {
        // for port in A B C; do cache_server --port=$port ... & done
        ASSERT_THAT(line, HasSubstr("for port in ")) << line;
        const std::string ports(absl::StripPrefix(
            line.substr(0, line.find(';')), "for port in "));
        servers = static_cast<int>(
            std::vector<std::string>(absl::StrSplit(ports, ' ', absl::SkipEmpty())).size());
        for (size_t j = i + 1; j < words.size() && words[j] != "&"; ++j) {
          if (words[j] != "--port=$port") server_args.push_back(words[j]);
        }
      } else if (words[i] == kClientCommand) {
        client_args.assign(words.begin() + i + 1, words.end());
      }
    }
  }
  ASSERT_EQ(servers, 3) << commands_;
  ASSERT_FALSE(client_args.empty()) << "no " << kClientCommand << " in:\n" << commands_;

  std::vector<ListeningProcess> replicas;
  std::vector<std::string> addresses;
  for (int i = 0; i < servers; ++i) {
    std::vector<std::string> argv = {CACHE_SERVER_PATH, "--port=0"};
    argv.insert(argv.end(), server_args.begin(), server_args.end());
    absl::StatusOr<ListeningProcess> replica = StartListening(argv);
    ASSERT_TRUE(replica.ok()) << replica.status();
    addresses.push_back(replica->address);
    replicas.push_back(*std::move(replica));
  }
  const std::string policy_path = ::testing::TempDir() + "/replicas.json";
  std::ofstream(policy_path) << policy_;

  std::vector<std::string> argv = {CACHE_CLIENT_PATH};
  bool target = false;
  for (const std::string& arg : client_args) {
    if (arg == "--policy=replicas.json") {
      argv.push_back("--policy=" + policy_path);
    } else if (absl::StartsWith(arg, "--target=ipv4:")) {
      target = true;
      const std::vector<std::string> written =
          absl::StrSplit(absl::StripPrefix(arg, "--target=ipv4:"), ',');
      ASSERT_EQ(written.size(), addresses.size()) << arg;
      argv.push_back(absl::StrCat("--target=ipv4:", absl::StrJoin(addresses, ",")));
    } else if (absl::StartsWith(arg, "--duration=")) {
      argv.push_back("--duration=2s");
    } else {
      argv.push_back(arg);
    }
  }
  ASSERT_TRUE(target) << "the client command has no --target=ipv4:...";
  ASSERT_THAT(argv, testing::Contains("load"));

  CommandResult r = RunCommand(argv, "", absl::Seconds(60));
  ASSERT_EQ(r.exit_code, 0) << absl::StrJoin(argv, " ") << "\n" << r.out << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("warning"))) << r.err;
  // "  CODE  count" per status code: every call OK, or NOT_FOUND for a Get
  // of a key no Store has written yet.
  int ok = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (!absl::StartsWith(line, "  ")) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ASSERT_EQ(fields.size(), 2u) << line;
    EXPECT_THAT(fields[0], testing::AnyOf("OK", "NOT_FOUND")) << r.out;
    if (fields[0] == "OK") {
      ASSERT_TRUE(absl::SimpleAtoi(fields[1], &ok)) << line;
    }
  }
  EXPECT_GT(ok, 0) << r.out;
}

}  // namespace
