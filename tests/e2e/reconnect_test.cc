// End-to-end: a busy client recovers from a backend restart at gRPC's own
// reconnect backoff. The backend is the cache_server binary, killed with
// SIGKILL and restarted on the same port; the client is this process,
// through the resilient channel, with blocking calls whose failures are all
// fast (a breaker, a spent retry budget), so that none of its threads waits
// on gRPC while the backend is down (reconnect_watch.h).

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpc_resilience/policy.h"
#include "src/client_interceptors/resilient_channel.h"
#include "tests/testing/subprocess.h"

namespace resilience::testing {
namespace {

using ::testing::StartsWith;

// gRPC's reconnect backoff for the test's channel: every step 200 ms, with
// gRPC's jitter of +-20 %.
constexpr int kReconnectBackoffMs = 200;
constexpr absl::Duration kLongestBackoff = absl::Milliseconds(kReconnectBackoffMs * 6 / 5);

// Retries and a breaker, as a user would have them.
constexpr char kPolicy[] = R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s"},
    "breaker": {"sre": {}}}]})";

// cache_server on `port` (0: any); its address.
std::unique_ptr<Subprocess> StartServer(int port, std::string* address) {
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      Subprocess::Start({CACHE_SERVER_PATH, absl::StrCat("--port=", port)});
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  std::optional<std::string> line = (*server)->ReadLine(absl::Seconds(10));
  EXPECT_TRUE(line.has_value()) << "cache_server printed no first line";
  if (!line.has_value()) return nullptr;
  EXPECT_THAT(*line, StartsWith("listening on 127.0.0.1:"));
  *address = std::string(absl::StripPrefix(*line, "listening on "));
  return *std::move(server);
}

// Calls Store from `threads` threads, each with a 1 s deadline, as fast as
// they return, until stopped; remembers when a call last succeeded.
class BusyClient {
 public:
  BusyClient(std::shared_ptr<grpc::Channel> channel, int threads)
      : stub_(cache::v1::CacheService::NewStub(channel)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~BusyClient() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

  // Waits (up to `timeout`) for a call that starts at or after `after` to
  // succeed; the time it succeeded.
  std::optional<absl::Time> SuccessAfter(absl::Time after, absl::Duration timeout) {
    const absl::Time give_up = absl::Now() + timeout;
    while (absl::Now() < give_up) {
      const absl::Time ok = absl::FromUnixNanos(first_ok_ns_.load());
      if (ok >= after) return ok;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return std::nullopt;
  }
  // Waits (up to `timeout`) for `n` more failed calls.
  bool Failures(int64_t n, absl::Duration timeout) {
    const int64_t target = failures_.load() + n;
    const absl::Time give_up = absl::Now() + timeout;
    while (absl::Now() < give_up) {
      if (failures_.load() >= target) return true;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return false;
  }
  // From now on, remember the first success after `after`.
  void ForgetSuccessesBefore(absl::Time after) {
    after_ns_.store(absl::ToUnixNanos(after));
    first_ok_ns_.store(0);
  }

 private:
  void Loop() {
    cache::v1::StoreReq request;
    request.set_key("k");
    request.set_value("v");
    while (!stop_.load()) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
      const absl::Time start = absl::Now();
      cache::v1::StoreResp response;
      if (stub_->Store(&context, request, &response).ok()) {
        int64_t none = 0;
        if (absl::ToUnixNanos(start) >= after_ns_.load()) {
          first_ok_ns_.compare_exchange_strong(none, absl::GetCurrentTimeNanos());
        }
      } else {
        failures_.fetch_add(1);
      }
    }
  }

  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> failures_{0};
  std::atomic<int64_t> after_ns_{0};
  std::atomic<int64_t> first_ok_ns_{0};
  std::vector<std::thread> threads_;
};

TEST(ReconnectTest, BusyClientRecoversAtGrpcsReconnectBackoff) {
  std::string address;
  std::unique_ptr<Subprocess> server = StartServer(0, &address);
  ASSERT_NE(server, nullptr);
  const int port = std::stoi(address.substr(address.rfind(':') + 1));

  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(kPolicy);
  ASSERT_TRUE(policies.ok()) << policies.status();
  ResilientChannelOptions options;
  options.args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
  options.args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
  options.args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
  ResilientChannel channel = CreateResilientChannel(
      address, grpc::InsecureChannelCredentials(), *policies, std::move(options));
  BusyClient client(channel.channel, 4);
  ASSERT_TRUE(client.SuccessAfter(absl::InfinitePast(), absl::Seconds(10)).has_value());

  server->Signal(SIGKILL);
  server->Finish("", absl::Seconds(10));
  ASSERT_TRUE(client.Failures(100, absl::Seconds(10)));  // the client is failing fast
  absl::SleepFor(absl::Seconds(1));                      // the outage

  std::unique_ptr<Subprocess> restarted = StartServer(port, &address);
  ASSERT_NE(restarted, nullptr);
  const absl::Time back = absl::Now();
  client.ForgetSuccessesBefore(back);
  const std::optional<absl::Time> ok = client.SuccessAfter(back, absl::Seconds(20));
  ASSERT_TRUE(ok.has_value()) << "no call succeeded within 20 s of the restart";
  const absl::Duration took = *ok - back;
  std::printf("first success %.3f s after the restart (target: %.3f s)\n",
              absl::ToDoubleSeconds(took),
              absl::ToDoubleSeconds(kLongestBackoff + absl::Milliseconds(500)));
  EXPECT_LE(took, kLongestBackoff + absl::Milliseconds(500));
}

}  // namespace
}  // namespace resilience::testing
