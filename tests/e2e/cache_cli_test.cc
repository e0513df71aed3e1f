// End-to-end: the built cache_server and cache_client binaries, run as a user
// would run them, as subprocesses talking over loopback: the commands, keys
// and values, flags, and shutdown. Deadlines and policy files are in
// cache_cli_policy_test.cc, the conventions every binary follows in
// command_line_test.cc.

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
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

// SIGTERM lets a call in flight finish, then the server exits 0.
TEST_F(CacheCliTest, GracefulShutdownOnSigterm) {
  StartServer({"--max_value_bytes=65536"});
  // 64 entries of 64 KiB, 4 MiB in all: the Dump is under way (the client
  // has its first item, the rest is in flight) when SIGTERM arrives.
  // Stored through a channel of the test's own, not 64 cache_client runs:
  // on a busy machine under a sanitizer those took up to a minute of the
  // test's 120 s (57 s seen beside 3 busy loops without one).
  auto channel = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  ASSERT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
  auto stub = cache::v1::CacheService::NewStub(channel);
  cache::v1::StoreReq store;
  store.set_value(std::string(65536, 'x'));
  for (int i = 0; i < 64; ++i) {
    grpc::ClientContext store_context;
    store_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    store.set_key(absl::StrCat("k", 100 + i));
    cache::v1::StoreResp stored;
    ASSERT_TRUE(stub->Store(&store_context, store, &stored).ok()) << "k" << 100 + i;
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  // A first connection attempt of a new channel can fail at once on a busy
  // machine; the Dump waits for one (the test is about the shutdown).
  context.set_wait_for_ready(true);
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
  // Connected first: the 300 ms below are for the call to reach its delay,
  // not for a connection (whose first attempt can fail at once on a busy
  // machine, and the call would then be refused before any SIGTERM).
  auto channel = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  ASSERT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
  auto stub = cache::v1::CacheService::NewStub(channel);
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

}  // namespace
