// PolicyFileWatcher on real files in a temporary directory: a change is
// seen however the file is replaced: a Kubernetes ConfigMap update (the
// `..data` symlink swapped by a rename, twice: the watches follow), a
// directory on the way replaced and then edited in place, an editor's
// rename over the file; Reload() reloads at once. StartReloading() reloads
// every target it is given and logs what they say. Each wait is bounded
// (Eventually()); what a reload read is the file's text at that moment.

#include "grpc_resilience/policy_file_watcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/mutex.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;

// Long enough for a loaded 2-core machine under a sanitizer; a change
// missed fails after it.
constexpr absl::Duration kWait = absl::Seconds(10);

void WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

std::string ReadFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "(missing)";
  std::string text;
  char buffer[256];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
  std::fclose(f);
  return text;
}

class PolicyFileWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A directory of its own for each run (--gtest_repeat included).
    std::string pattern = absl::StrCat(::testing::TempDir(), "/watcher_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << pattern;
    directory_ = pattern;
  }

  void Watch(const std::string& path) {
    path_ = path;
    absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> started =
        PolicyFileWatcher::Start(path, [this](absl::string_view why) {
          const std::string text = ReadFile(path_);
          MutexLock lock(&mu_);
          reloads_.push_back(absl::StrCat(why, ": ", text));
        });
    ASSERT_TRUE(started.ok()) << started.status();
    watcher_ = *std::move(started);
  }

  // Whether a reload read `text` within kWait.
  bool Reloaded(const std::string& why_and_text) {
    return Eventually(
        [&] {
          MutexLock lock(&mu_);
          return !reloads_.empty() && reloads_.back() == why_and_text;
        },
        kWait);
  }

  std::vector<std::string> reloads() {
    MutexLock lock(&mu_);
    return reloads_;
  }

  // As the kubelet updates a ConfigMap volume: the files in a new
  // timestamped directory, a symlink `..data_tmp` to it renamed over
  // `..data`, the old directory removed.
  void KubeletUpdate(const std::string& version, const std::string& text,
                     const std::string& old_version) {
    const std::string fresh = absl::StrCat(directory_, "/..", version);
    ASSERT_EQ(mkdir(fresh.c_str(), 0700), 0);
    WriteFile(fresh + "/policy.json", text);
    const std::string tmp = directory_ + "/..data_tmp";
    ASSERT_EQ(symlink((".." + version).c_str(), tmp.c_str()), 0);
    ASSERT_EQ(rename(tmp.c_str(), (directory_ + "/..data").c_str()), 0);
    if (old_version.empty()) return;
    const std::string old = absl::StrCat(directory_, "/..", old_version);
    ASSERT_EQ(unlink((old + "/policy.json").c_str()), 0);
    ASSERT_EQ(rmdir(old.c_str()), 0);
  }

  std::string directory_;
  std::string path_;
  Mutex mu_;
  std::vector<std::string> reloads_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PolicyFileWatcher> watcher_;
};

// policy.json -> ..data/policy.json, ..data -> ..2026_01 swapped to
// ..2026_02, then to ..2026_03: each update is reloaded once settled.
TEST_F(PolicyFileWatcherTest, KubernetesConfigMapUpdatesAreSeen) {
  KubeletUpdate("2026_01", "one", "");
  const std::string path = directory_ + "/policy.json";
  ASSERT_EQ(symlink("..data/policy.json", path.c_str()), 0);
  Watch(path);
  KubeletUpdate("2026_02", "two", "2026_01");
  EXPECT_TRUE(Reloaded("file change: two")) << ::testing::PrintToString(reloads());
  KubeletUpdate("2026_03", "three", "2026_02");
  EXPECT_TRUE(Reloaded("file change: three")) << ::testing::PrintToString(reloads());
}

// The policy's directory is replaced (a new one renamed in, the old moved
// away), then the new one's file is edited in place: both are seen, the
// edit through a watch on the new directory; so is a directory removed,
// made again and its file written.
TEST_F(PolicyFileWatcherTest, ReplacedDirectoryIsWatchedAfterwards) {
  const std::string config = directory_ + "/config";
  ASSERT_EQ(mkdir(config.c_str(), 0700), 0);
  WriteFile(config + "/policy.json", "one");
  Watch(config + "/policy.json");
  const std::string fresh = directory_ + "/config.new";
  ASSERT_EQ(mkdir(fresh.c_str(), 0700), 0);
  WriteFile(fresh + "/policy.json", "two");
  ASSERT_EQ(rename(config.c_str(), (directory_ + "/config.old").c_str()), 0);
  ASSERT_EQ(rename(fresh.c_str(), config.c_str()), 0);
  EXPECT_TRUE(Reloaded("file change: two")) << ::testing::PrintToString(reloads());
  WriteFile(config + "/policy.json", "three");
  EXPECT_TRUE(Reloaded("file change: three")) << ::testing::PrintToString(reloads());
  // Removed and made again, the file written afterwards.
  ASSERT_EQ(unlink((config + "/policy.json").c_str()), 0);
  ASSERT_EQ(rmdir(config.c_str()), 0);
  ASSERT_EQ(mkdir(config.c_str(), 0700), 0);
  WriteFile(config + "/policy.json", "four");
  EXPECT_TRUE(Reloaded("file change: four")) << ::testing::PrintToString(reloads());
}

// An editor's save (a new file renamed over it) and a request.
TEST_F(PolicyFileWatcherTest, RenameOverTheFileAndReload) {
  const std::string path = directory_ + "/policy.json";
  WriteFile(path, "one");
  Watch(path);
  WriteFile(path + ".new", "two");
  ASSERT_EQ(rename((path + ".new").c_str(), path.c_str()), 0);
  EXPECT_TRUE(Reloaded("file change: two")) << ::testing::PrintToString(reloads());
  watcher_->Reload();
  EXPECT_TRUE(Reloaded("SIGHUP: two")) << ::testing::PrintToString(reloads());
}

// What StartReloading() reaches of a ClientResilience or ServerResilience:
// its ReloadFile(); each update warns of `warning`, or fails.
class FakeResilience {
 public:
  explicit FakeResilience(std::string warning) : warning_(std::move(warning)) {}

  absl::StatusOr<PolicyUpdate> ReloadFile(const std::string& path,
                                          const PolicySetLoadOptions& options) {
    MutexLock lock(&mu_);
    reloads_.push_back(absl::StrCat(path, options.strict ? " strict" : ""));
    if (warning_.empty()) return absl::InvalidArgumentError("broken");
    PolicyUpdate update;
    update.warnings.push_back(warning_);
    return update;
  }

  std::vector<std::string> reloads() {
    MutexLock lock(&mu_);
    return reloads_;
  }

 private:
  const std::string warning_;
  Mutex mu_;
  std::vector<std::string> reloads_ ABSL_GUARDED_BY(mu_);
};

// One call reloads every target (a shared and a plain pointer) with the
// load options given, in order, and logs the reload and each warning; a
// target whose reload fails logs nothing (its events listener tells).
TEST_F(PolicyFileWatcherTest, StartReloadingReloadsEveryTarget) {
  const std::string path = directory_ + "/policy.json";
  WriteFile(path, "{}");
  auto shared = std::make_shared<FakeResilience>("from shared");
  FakeResilience plain("from plain");
  FakeResilience failing("");
  Mutex mu;
  std::vector<std::string> lines;
  PolicyFileWatcher::ReloadOptions options;
  options.load.strict = true;
  options.log = [&](absl::string_view line) {
    MutexLock lock(&mu);
    lines.emplace_back(line);
  };
  absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> watcher =
      PolicyFileWatcher::StartReloading(path, options, shared, &plain, &failing);
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  (*watcher)->Reload();
  ASSERT_TRUE(Eventually([&] { return failing.reloads().size() == 1; }, kWait));
  watcher->reset();  // joins the thread: its last log line is written
  EXPECT_THAT(lines, ::testing::ElementsAre("SIGHUP: reloading " + path, "warning: from shared",
                                            "warning: from plain"));
  EXPECT_THAT(shared->reloads(), ::testing::ElementsAre(path + " strict"));
  EXPECT_THAT(plain.reloads(), ::testing::ElementsAre(path + " strict"));
}

}  // namespace
}  // namespace resilience
