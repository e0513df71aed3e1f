// End-to-end: the built cache_server reloads its --policy file while it
// serves, by the file's change alone (an editor's write-and-rename) and by
// SIGHUP (which no longer stops it), within 5 s; Gets in flight across the
// reloads all succeed; a broken file leaves the last good policies in
// force. Dump's concurrency limit (8, then 2) is observed as a client sees
// it: Dumps left unread stay in flight until one is refused
// RESOURCE_EXHAUSTED, with the limit in its message.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/grpc.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace {

using ::resilience::testing::CommandResult;
using ::resilience::testing::ListeningProcess;
using ::resilience::testing::StartListening;
using ::resilience::testing::Subprocess;
using ::testing::HasSubstr;

constexpr char kServer[] = CACHE_SERVER_PATH;
constexpr int kEntries = 600;         // 600 x 16 KiB: more than a stream's windows
constexpr int kValueBytes = 16 << 10;

std::string Policy(int dump_limit) {
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService",
      "method": "Dump"}], "throttle": {"maxConcurrency": )",
                      dump_limit, "}}]}");
}

void WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// As editors save: a new file beside it, renamed over it.
void ReplaceFile(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".new";
  WriteFile(temporary, text);
  ASSERT_EQ(std::rename(temporary.c_str(), path.c_str()), 0);
}

class CacheServerReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = absl::StrCat(::testing::TempDir(), "/reload_", getpid(), "_",
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(directory_.c_str(), 0700), 0);
  }

  void Start(const std::string& policy_path) {
    absl::StatusOr<ListeningProcess> server =
        StartListening({kServer, "--grace_period=1s", "--policy=" + policy_path});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server->process);
    target_ = server->address;
    auto stub = NewStub();
    cache::v1::StoreReq store;
    store.set_value(std::string(kValueBytes, 'v'));
    for (int i = 0; i < kEntries; ++i) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      store.set_key(absl::StrCat("key", 100000 + i));
      cache::v1::StoreResp response;
      ASSERT_TRUE(stub->Store(&context, store, &response).ok());
    }
  }

  std::unique_ptr<cache::v1::CacheService::Stub> NewStub() {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection of its own
    // A receive window that stays at HTTP/2's 64 KiB: with gRPC's BDP
    // probing, loopback grew it past a whole Dump, which then finished
    // unread and freed its slot.
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    // Connected before its first call: a first connection attempt can fail
    // at once on a busy machine, and a call without wait-for-ready (a Store
    // of Start(), a probing Dump, a Get that must not fail) would then end
    // UNAVAILABLE; the tests are about the reload, not the connect.
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
    EXPECT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))))
        << "no connection to " << target_ << " within 10 s";
    return cache::v1::CacheService::NewStub(channel);
  }

  // The Dump limit in force, as the server's refusal states it: Dumps are
  // opened (each reads one entry and then stops reading: the server's
  // handler waits on flow control, so it stays in flight) until one is
  // refused, "concurrency limit N reached"; then all are cancelled. 0 when
  // none of kProbeDumps is refused. The refusal's message, not the count of
  // Dumps admitted: the handlers of cancelled Dumps take a while to see
  // their cancellation, so an earlier probe's may still hold slots.
  static constexpr int kProbeDumps = 10;
  int LimitInForce() {
    struct Open {
      std::unique_ptr<cache::v1::CacheService::Stub> stub;
      grpc::ClientContext context;
      std::unique_ptr<grpc::ClientReader<cache::v1::DumpItem>> reader;
    };
    std::vector<std::unique_ptr<Open>> open;
    int limit = 0;
    for (int i = 0; i < kProbeDumps && limit == 0; ++i) {
      auto o = std::make_unique<Open>();
      o->stub = NewStub();
      o->context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      o->reader = o->stub->Dump(&o->context, cache::v1::DumpReq());
      cache::v1::DumpItem item;
      if (!o->reader->Read(&item)) {
        const grpc::Status status = o->reader->Finish();
        o->reader.reset();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
            << status.error_message();
        const std::string text = status.error_message();  // a copy, not a view
        absl::string_view message = text;
        const size_t at = message.find(kLimitWords);
        EXPECT_NE(at, absl::string_view::npos) << message;
        if (at == absl::string_view::npos) break;
        message.remove_prefix(at + std::strlen(kLimitWords));
        EXPECT_TRUE(absl::SimpleAtoi(message.substr(0, message.find(' ')), &limit)) << message;
      }
      open.push_back(std::move(o));
    }
    for (auto& o : open) {
      if (o->reader == nullptr) continue;
      o->context.TryCancel();
      o->reader->Finish();
    }
    return limit;
  }
  static constexpr char kLimitWords[] = "/cache.v1.CacheService/Dump: concurrency limit ";

  // Polls (bounded) until LimitInForce() is `want`; how long it took, or
  // InfiniteDuration() after `limit`.
  absl::Duration TimeUntilLimit(int want, absl::Duration limit) {
    const absl::Time start = absl::Now();
    for (int i = 0; i < 400 && absl::Now() - start < limit; ++i) {
      if (LimitInForce() == want) return absl::Now() - start;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return absl::InfiniteDuration();
  }

  // Gets of a stored key from 4 threads until Stop(); every status kept.
  void StartGets() {
    for (int t = 0; t < 4; ++t) {
      getters_.emplace_back([this] {
        auto stub = NewStub();
        while (!stop_gets_.load()) {
          grpc::ClientContext context;
          context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
          cache::v1::GetReq request;
          request.set_key("key100000");
          cache::v1::GetResp response;
          const grpc::Status status = stub->Get(&context, request, &response);
          gets_.fetch_add(1);
          if (!status.ok()) failed_gets_.fetch_add(1);
        }
      });
    }
  }
  void StopGets() {
    stop_gets_.store(true);
    for (std::thread& t : getters_) t.join();
    getters_.clear();
  }

  CommandResult Stop() {
    server_->Signal(SIGTERM);
    return server_->Finish("", absl::Seconds(30));
  }

  std::string directory_;
  std::unique_ptr<Subprocess> server_;
  std::string target_;
  std::vector<std::thread> getters_;
  std::atomic<bool> stop_gets_{false};
  std::atomic<int64_t> gets_{0};
  std::atomic<int64_t> failed_gets_{0};
};

// The file alone: rewritten (8 -> 2), it applies within 5 s with Gets
// running; a broken file then changes nothing; a good one applies again.
TEST_F(CacheServerReloadTest, FileChangeAppliesAndBrokenFileKeepsTheLastGood) {
  const std::string path = directory_ + "/policies.json";
  WriteFile(path, Policy(8));
  Start(path);
  ASSERT_EQ(LimitInForce(), 8);
  StartGets();
  ReplaceFile(path, Policy(2));
  const absl::Duration took = TimeUntilLimit(2, absl::Seconds(10));
  EXPECT_LT(took, absl::Seconds(5));
  ReplaceFile(path, R"({"methodConfig": [{"name": [{}], "throttle": {"maxConcurrency": -1}}]})");
  absl::SleepFor(absl::Milliseconds(500));  // the watcher's settling time, ten times over
  EXPECT_EQ(LimitInForce(), 2);  // still the last good policies
  ReplaceFile(path, Policy(8));
  EXPECT_LT(TimeUntilLimit(8, absl::Seconds(10)), absl::Seconds(5));
  StopGets();
  EXPECT_GT(gets_.load(), 0);
  EXPECT_EQ(failed_gets_.load(), 0) << "of " << gets_.load() << " Gets";
  const CommandResult result = Stop();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("Z policies reloaded on server from " + path +
                                    " (generation 2): 1 method changed (changed "
                                    "/cache.v1.CacheService/Dump)"));
  EXPECT_THAT(result.err,
              HasSubstr("Z policy reload on server from " + path +
                        " failed, generation 2 stays in force: policy file \"" + path + "\": "));
  EXPECT_THAT(result.err, HasSubstr("maxConcurrency"));
  EXPECT_THAT(result.err, HasSubstr("(generation 3)"));
  std::printf("file change applied in %s; %lld Gets across the reloads, %lld failed\n",
              absl::FormatDuration(took).c_str(), static_cast<long long>(gets_.load()),
              static_cast<long long>(failed_gets_.load()));
}

// SIGHUP alone: the policy path is a symlink to a file in another
// directory, rewritten by a writer that keeps it open (nothing the watcher
// sees: it follows the link, but a write counts once closed); SIGHUP
// reloads it within 5 s, and the server keeps serving.
TEST_F(CacheServerReloadTest, SighupReloadsAndDoesNotStopTheServer) {
  const std::string real_directory = directory_ + "/real";
  ASSERT_EQ(mkdir(real_directory.c_str(), 0700), 0);
  const std::string target = real_directory + "/policies.json";
  const std::string path = directory_ + "/policies.json";
  WriteFile(target, Policy(8));
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  Start(path);
  ASSERT_EQ(LimitInForce(), 8);
  StartGets();
  FILE* writer = std::fopen(target.c_str(), "w");
  ASSERT_NE(writer, nullptr);
  std::fputs(Policy(2).c_str(), writer);
  std::fflush(writer);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(LimitInForce(), 8);  // not reloaded without the signal
  const absl::Time hup = absl::Now();
  server_->Signal(SIGHUP);
  const absl::Duration took = TimeUntilLimit(2, absl::Seconds(10));
  EXPECT_LT(took, absl::Seconds(5));
  std::fclose(writer);
  StopGets();
  EXPECT_EQ(failed_gets_.load(), 0) << "of " << gets_.load() << " Gets";
  const CommandResult result = Stop();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("cache_server: SIGHUP: reloading " + path));
  EXPECT_THAT(result.err, HasSubstr("(generation 2): 1 method changed"));
  std::printf("SIGHUP applied in %s (observed after %s); %lld Gets across it, %lld failed\n",
              absl::FormatDuration(took).c_str(), absl::FormatDuration(absl::Now() - hup).c_str(),
              static_cast<long long>(gets_.load()), static_cast<long long>(failed_gets_.load()));
}

}  // namespace
