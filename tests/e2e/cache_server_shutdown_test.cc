// End-to-end: how the built cache_server shuts down on SIGTERM, and where it
// agrees to listen. The server runs as a subprocess on loopback; the clients
// are in-process gRPC channels (one connection each) and raw sockets.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback_socket.h"
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

class CacheServerShutdownTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags) {
    flags.insert(flags.begin(), kServer);
    absl::StatusOr<ListeningProcess> server = StartListening(flags);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server->process);
    target_ = server->address;
    ASSERT_THAT(target_, StartsWith("127.0.0.1:"));
    ASSERT_TRUE(absl::SimpleAtoi(absl::StripPrefix(target_, "127.0.0.1:"), &port_));
  }

  // A stub on a connection of its own (as another process would have),
  // connected: on a busy machine a first connection attempt to the freshly
  // started server failed at once, and a call without wait-for-ready then
  // ended UNAVAILABLE (before any SIGTERM) and left the channel in gRPC's
  // reconnect backoff (1 s) with every call failing; the tests are about the
  // shutdown, not the connect (WaitForConnected() tries again within 10 s).
  std::unique_ptr<cache::v1::CacheService::Stub> NewStub() {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
    EXPECT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))))
        << "no connection to " << target_ << " within 10 s";
    return cache::v1::CacheService::NewStub(channel);
  }

  // SIGTERM, then waits (bounded) for the exit; returns how long it took.
  absl::Duration SigtermAndWait(CommandResult& result) {
    const absl::Time start = absl::Now();
    server_->Signal(SIGTERM);
    result = server_->Finish("", absl::Seconds(30));
    return absl::Now() - start;
  }

  std::unique_ptr<Subprocess> server_;
  std::string target_;
  int port_ = 0;
};

// Dumps under way at SIGTERM, read slowly on connections of their own, get
// every entry and an OK status. gRPC 1.51 closed each connection as soon as
// the server had written its last bytes after the GOAWAY, and the client's
// window updates then reset it, so most runs lost a Dump's tail
// ("Connection reset by peer"); the server exits within the grace period.
TEST_F(CacheServerShutdownTest, StreamsAdmittedBeforeSigtermAreDeliveredWhole) {
  // The readers take about 1 s; the connections stay open for the grace
  // period, for clients still reading.
  StartServer({"--grace_period=4s"});
  constexpr int kEntries = 1500;
  constexpr int kReaders = 6;
  {
    auto stub = NewStub();
    cache::v1::StoreReq store;
    store.set_value(std::string(4096, 'v'));
    for (int i = 0; i < kEntries; ++i) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      store.set_key(absl::StrCat("key", 100000 + i));
      cache::v1::StoreResp response;
      ASSERT_TRUE(stub->Store(&context, store, &response).ok());
    }
  }
  std::atomic<int> started{0};
  std::vector<int> items(kReaders, 0);
  std::vector<grpc::Status> statuses(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      auto stub = NewStub();
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      // The test is about the shutdown, not the connect: on a busy machine a
      // connection attempt to the live server failed once at once
      // (UNAVAILABLE before any entry, long before the SIGTERM); waiting for
      // ready has gRPC try again within the deadline.
      context.set_wait_for_ready(true);
      auto reader = stub->Dump(&context, cache::v1::DumpReq());
      cache::v1::DumpItem item;
      bool counted = false;
      while (reader->Read(&item)) {
        ++items[r];
        if (!counted) started.fetch_add(1);
        counted = true;
        absl::SleepFor(absl::Microseconds(500));  // a slow reader: about 1 s per Dump
      }
      if (!counted) started.fetch_add(1);
      statuses[r] = reader->Finish();
    });
  }
  for (int i = 0; i < 2000 && started.load() < kReaders; ++i) absl::SleepFor(absl::Milliseconds(5));
  CommandResult result;
  const absl::Duration took = SigtermAndWait(result);
  for (std::thread& reader : readers) reader.join();
  for (int r = 0; r < kReaders; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "reader " << r << " after " << items[r]
                                  << " entries: " << statuses[r].error_message();
    EXPECT_EQ(items[r], kEntries) << "reader " << r;
  }
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(took, absl::Seconds(6));
}

// Calls that arrive while the server drains (here: a slow Dump keeps it
// draining) are refused UNAVAILABLE, "server shutting down", with a pushback
// that clients which honour it wait out, and the refusals of the drain's last
// 50 ms are sent after the GOAWAY, so that callers that call again at once
// are not calling when it goes out either: none ends CANCELLED (what gRPC
// 1.51 answers to a call that reaches a server after its Shutdown(), and no
// client retries).
TEST_F(CacheServerShutdownTest, CallsRacingSigtermAreRefusedUnavailable) {
  StartServer({"--grace_period=3s"});
  {
    auto stub = NewStub();
    cache::v1::StoreReq store;
    store.set_value(std::string(4096, 'v'));
    for (int i = 0; i < 200; ++i) {
      grpc::ClientContext context;
      store.set_key(absl::StrCat("key", 1000 + i));
      cache::v1::StoreResp response;
      ASSERT_TRUE(stub->Store(&context, store, &response).ok());
    }
  }
  // The Dump: 200 entries, one every 5 ms: about 1 s in flight.
  std::atomic<bool> dump_started{false};
  grpc::Status dump_status;
  std::thread dump([&] {
    auto stub = NewStub();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    context.set_wait_for_ready(true);  // as in the test above
    auto reader = stub->Dump(&context, cache::v1::DumpReq());
    cache::v1::DumpItem item;
    while (reader->Read(&item)) {
      dump_started.store(true);
      absl::SleepFor(absl::Milliseconds(5));
    }
    dump_started.store(true);
    dump_status = reader->Finish();
  });
  for (int i = 0; i < 2000 && !dump_started.load(); ++i) absl::SleepFor(absl::Milliseconds(5));

  // Closed-loop callers, each on a connection of its own; they stop 1.5 s
  // after the SIGTERM.
  absl::Mutex mu;
  std::map<grpc::StatusCode, int> codes;
  int refusals_with_pushback = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&, c] {
      auto stub = NewStub();
      for (int i = 0; i < 100000 && !stop.load(); ++i) {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
        cache::v1::GetReq request;
        request.set_key("key1000");
        cache::v1::GetResp response;
        const grpc::Status status = stub->Get(&context, request, &response);
        int pushback_ms = 0;
        const auto& trailers = context.GetServerTrailingMetadata();
        auto it = trailers.find("grpc-retry-pushback-ms");
        if (it != trailers.end()) {
          (void)absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                                 &pushback_ms);
        }
        {
          absl::MutexLock lock(&mu);
          ++codes[status.error_code()];
          if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
              absl::StrContains(status.error_message(), "server shutting down") &&
              pushback_ms > 0) {
            ++refusals_with_pushback;
          }
        }
        // Half the callers wait out a pushback as gRPC's retry does; the
        // others call again at once.
        if (c % 2 == 0) absl::SleepFor(absl::Milliseconds(std::min(pushback_ms, 2000)));
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(100));  // the callers are calling
  CommandResult result;
  const absl::Time start = absl::Now();
  server_->Signal(SIGTERM);
  absl::SleepFor(absl::Milliseconds(1500));
  stop.store(true);
  for (std::thread& caller : callers) caller.join();
  dump.join();
  result = server_->Finish("", absl::Seconds(30));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(dump_status.ok()) << dump_status.error_message();
  absl::MutexLock lock(&mu);
  std::string summary;
  for (const auto& [code, count] : codes) absl::StrAppend(&summary, code, ":", count, " ");
  EXPECT_EQ(codes[grpc::StatusCode::CANCELLED], 0) << summary;
  EXPECT_GT(codes[grpc::StatusCode::OK], 0) << summary;
  EXPECT_GE(refusals_with_pushback, 8) << summary;
}

// With nothing in flight, idle connections (a socket that sent nothing, a
// gRPC channel between calls) do not hold the shutdown for the grace period
// (they held it 5 s of 5 s).
TEST_F(CacheServerShutdownTest, IdleConnectionsDoNotHoldTheShutdown) {
  StartServer({"--grace_period=5s"});
  const int idle_socket = resilience::testing::ConnectLoopback(port_);  // sends nothing
  ASSERT_GE(idle_socket, 0);
  auto stub = NewStub();
  grpc::ClientContext context;
  cache::v1::GetReq request;
  request.set_key("absent");
  cache::v1::GetResp response;
  EXPECT_EQ(stub->Get(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  CommandResult result;
  const absl::Duration took = SigtermAndWait(result);
  close(idle_socket);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // 0.9 s: 0.5 s of NOT_SERVING grace, 100 ms of drain, 50 parked, 250 to close
  EXPECT_LT(took, absl::Seconds(2));
}

// After SIGTERM the health service says NOT_SERVING, and calls that still
// arrive (from clients that have not heard it, or check no health) are
// served for --not_serving_grace; only then are they refused, UNAVAILABLE
// "server shutting down". Without the grace the first call after SIGTERM
// was refused (a rolling restart's failed calls, docs/replicas.md).
TEST_F(CacheServerShutdownTest, ServesForItsNotServingGraceAfterSigterm) {
  constexpr absl::Duration kGrace = absl::Seconds(2);
  StartServer({"--grace_period=8s", "--not_serving_grace=2s"});
  auto stub = NewStub();
  auto store = [&] {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    cache::v1::StoreReq request;
    request.set_key("k");
    request.set_value("v");
    cache::v1::StoreResp response;
    return stub->Store(&context, request, &response);
  };
  ASSERT_TRUE(store().ok());
  const absl::Time sigterm = absl::Now();
  server_->Signal(SIGTERM);
  int served = 0;
  grpc::Status refused;
  while (absl::Now() - sigterm < absl::Seconds(10)) {  // bounded: the grace ends at 2 s
    const grpc::Status status = store();
    if (!status.ok()) {
      refused = status;
      break;
    }
    ++served;
    absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Duration first_refusal = absl::Now() - sigterm;
  CommandResult result = server_->Finish("", absl::Seconds(30));
  EXPECT_GT(served, 10);
  EXPECT_GE(first_refusal, kGrace);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("server shutting down"));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

// A --host other hosts can reach is refused before listening, in one line
// that names the floods and points to the proxy setup, unless the flag that
// names the risk is given (192.0.2.1, TEST-NET-1, is no address of this
// host: with the flag the bind itself fails). Nothing listens beyond
// loopback, whatever the outcome.
TEST(CacheServerHostTest, RefusesANonLoopbackHostWithoutTheRiskFlag) {
  // The port asked for is one a loopback socket of ours listens on, so a
  // server that failed to refuse 0.0.0.0 could not listen there either.
  const int taken = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(bind(taken, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(listen(taken, 1), 0);
  ASSERT_EQ(getsockname(taken, reinterpret_cast<sockaddr*>(&address), &length), 0);
  CommandResult r = RunCommand(
      {kServer, "--host=0.0.0.0", absl::StrCat("--port=", ntohs(address.sin_port))}, "",
      absl::Seconds(10));
  close(taken);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("\"0.0.0.0\" is not a loopback address"));
  EXPECT_THAT(r.err, HasSubstr("rapid reset"));
  EXPECT_THAT(r.err, HasSubstr("docs/server-hardening.md"));
  EXPECT_THAT(r.err, HasSubstr("--allow_public_listen_unproxied"));

  r = RunCommand({kServer, "--host=192.0.2.1", "--allow_public_listen_unproxied"}, "",
                 absl::Seconds(10));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot listen on 192.0.2.1:0"));
  EXPECT_THAT(r.err, Not(HasSubstr("loopback")));
}

}  // namespace
