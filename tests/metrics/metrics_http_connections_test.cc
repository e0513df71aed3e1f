// MetricsHttpServer under many connections at once: slow (slowloris) and
// idle ones cost no thread and are closed after the request timeout, and a
// scrape behind hundreds of them is answered at once (issue 40 item 14).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc_resilience/metrics_http.h"
#include "gtest/gtest.h"
#include "tests/metrics/http_test_client.h"

namespace resilience {
namespace {

using testing::Connect;
using testing::Fetch;
using testing::HttpResponse;
using testing::StartOrDie;

// Connections that send their request slowly (slowloris: a header line every
// 100 ms, never the blank line) or nothing at all hold no worker: a scrape
// behind two slowloris and 20 idle connections is answered within 1 s (once,
// with civetweb's 2 workers and a 10 s timeout, it waited 10 s).
TEST(MetricsHttpServerTest, SlowAndIdleConnectionsDoNotBlockAScrape) {
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie({}, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  std::vector<int> held;
  std::atomic<bool> done{false};
  std::vector<std::thread> slowloris;
  for (int i = 0; i < 2; ++i) {
    const int fd = Connect(server->port());
    ASSERT_GE(fd, 0);
    held.push_back(fd);
    slowloris.emplace_back([fd, &done] {
      const std::string start = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      if (send(fd, start.data(), start.size(), MSG_NOSIGNAL) < 0) return;
      for (int line = 0; line < 100 && !done.load(); ++line) {  // 10 s at most
        if (send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    const int fd = Connect(server->port());
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  const absl::Time start = absl::Now();
  const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/metrics");
  const absl::Duration took = absl::Now() - start;
  done.store(true);
  for (std::thread& thread : slowloris) thread.join();
  for (int fd : held) close(fd);
  ASSERT_TRUE(response.has_value()) << "no answer after " << took;
  EXPECT_EQ(response->status, 200);
  EXPECT_LT(took, absl::Seconds(1));
}

// Opens `count` connections to 127.0.0.1:port that never send, without
// waiting on each: the ones established within 5 s.
std::vector<int> OpenIdleConnections(int port, int count) {
  std::vector<int> opening;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    opening.push_back(fd);
  }
  std::vector<int> open;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  for (int fd : opening) {
    pollfd p = {fd, POLLOUT, 0};
    const int left =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    int error = 0;
    socklen_t length = sizeof error;
    if (poll(&p, 1, left) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
        error == 0) {
      open.push_back(fd);
    } else {
      close(fd);
    }
  }
  return open;
}

// At least `wanted` file descriptors for this process, if the hard limit
// allows; false when it does not.
bool EnsureFileDescriptors(rlim_t wanted) {
  rlimit files = {};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return false;
  if (files.rlim_cur >= wanted) return true;
  if (files.rlim_max < wanted) return false;
  files.rlim_cur = wanted;
  return setrlimit(RLIMIT_NOFILE, &files) == 0;
}

// Issue 40 item 14: 500 idle connections to the metrics port (connected,
// never sending) made both scrapes time out at 2 s (254 accepted) while
// civetweb gave each connection a thread until its request timeout. One
// thread now waits on all of them; a scrape is answered at once.
TEST(MetricsHttpServerTest, FiveHundredIdleConnectionsDoNotDelayAScrape) {
  if (!EnsureFileDescriptors(2048)) GTEST_SKIP() << "needs 2048 file descriptors";
  std::unique_ptr<MetricsHttpServer> server = StartOrDie({}, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  const absl::Time opened = absl::Now();
  const std::vector<int> idle = OpenIdleConnections(server->port(), 500);
  std::cout << idle.size() << " idle connections open in " << absl::Now() - opened << "\n";
  EXPECT_EQ(idle.size(), 500u);
  for (int scrape = 1; scrape <= 2; ++scrape) {
    const absl::Time start = absl::Now();
    const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/metrics");
    const absl::Duration took = absl::Now() - start;
    std::cout << "scrape " << scrape << " behind them: " << took << "\n";
    ASSERT_TRUE(response.has_value()) << "no answer after " << took;
    EXPECT_EQ(response->status, 200);
    EXPECT_LT(took, absl::Seconds(1));
  }
  for (int fd : idle) close(fd);
}

// A request that has not arrived whole within request_timeout of the
// connection's accept is closed unanswered.
TEST(MetricsHttpServerTest, IdleConnectionsAreClosedAfterTheRequestTimeout) {
  MetricsHttpServer::Options options;
  options.request_timeout = absl::Milliseconds(200);
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie(options, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  // Before the connection: its request time counts from its accept, later.
  const absl::Time start = absl::Now();
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL), 23);
  char byte;
  EXPECT_EQ(recv(fd, &byte, 1, 0), 0);  // closed unanswered (the socket waits 10 s at most)
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(190));  // 10 ms for two clocks' reads
  EXPECT_LT(took, absl::Seconds(5));
  close(fd);
}

}  // namespace
}  // namespace resilience
