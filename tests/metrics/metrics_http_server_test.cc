// MetricsHttpServer over real sockets, with a plain HTTP/1.0 client.

#include "grpc_resilience/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "tests/metrics/sample_exposition.h"
#include "tests/testing/loopback_socket.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  std::optional<std::string> Header(absl::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return std::nullopt;
  }
};

// Connects to 127.0.0.1:port; -1 when refused.
int Connect(int port) {
  const int fd = testing::ConnectLoopback(port);
  if (fd < 0) return -1;
  timeval timeout = {10, 0};  // a hung server fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  return fd;
}

// Sends `request` (a whole HTTP request) and reads the answer to the end
// (the server closes the connection). nullopt when the connection fails or
// the answer does not parse.
std::optional<HttpResponse> Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return std::nullopt;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string raw;
  char buffer[65536];
  for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) raw.append(buffer, n);
  close(fd);

  const size_t end_of_headers = raw.find("\r\n\r\n");
  if (end_of_headers == std::string::npos) return std::nullopt;
  HttpResponse response;
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(raw).substr(0, end_of_headers), "\r\n");
  const std::vector<absl::string_view> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::StartsWith(status_line[0], "HTTP/1.") ||
      !absl::SimpleAtoi(status_line[1], &response.status)) {
    return std::nullopt;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) return std::nullopt;
    response.headers.emplace_back(
        absl::AsciiStrToLower(lines[i].substr(0, colon)),
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  response.body = raw.substr(end_of_headers + 4);
  return response;
}

// `method path` as HTTP/1.0.
std::optional<HttpResponse> Fetch(int port, absl::string_view method, absl::string_view path) {
  return Exchange(port, absl::StrCat(method, " ", path,
                                     " HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n"));
}

std::unique_ptr<MetricsHttpServer> StartOrDie(MetricsHttpServer::Options options,
                                              MetricsHttpServer::RenderFunction render) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start(std::move(options), std::move(render));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

TEST(MetricsHttpServerTest, ServesMetricsOnAPickedPort) {
  const std::string exposition = testing::RenderSampleExposition();
  std::atomic<int> renders{0};
  std::unique_ptr<MetricsHttpServer> server = StartOrDie({}, [&] {
    ++renders;
    return exposition;
  });
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->options().bind_address, "127.0.0.1");

  const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/metrics");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->Header("content-length"), absl::StrCat(exposition.size()));
  EXPECT_EQ(response->body, exposition);
  EXPECT_EQ(renders.load(), 1);
  // An HTTP date: "Mon, 02 Jan 2006 15:04:05 GMT".
  const std::optional<std::string> date = response->Header("date");
  ASSERT_TRUE(date.has_value());
  absl::Time parsed;
  std::string error;
  EXPECT_TRUE(
      absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", *date, absl::UTCTimeZone(), &parsed, &error))
      << *date << ": " << error;
  EXPECT_LT(absl::AbsDuration(parsed - absl::Now()), absl::Minutes(5)) << *date;

  // Each scrape renders afresh; a query string changes nothing.
  const std::optional<HttpResponse> again = Fetch(server->port(), "GET", "/metrics?x=1");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(again->body, exposition);
  EXPECT_EQ(renders.load(), 2);
}

TEST(MetricsHttpServerTest, OtherPathsAndMethods) {
  std::atomic<int> renders{0};
  std::unique_ptr<MetricsHttpServer> server = StartOrDie({}, [&] {
    ++renders;
    return std::string("up 1\n");
  });
  ASSERT_NE(server, nullptr);
  for (absl::string_view path : {"/other", "/", "/metrics/", "/metricsx", "/favicon.ico"}) {
    const std::optional<HttpResponse> response = Fetch(server->port(), "GET", path);
    ASSERT_TRUE(response.has_value()) << path;
    EXPECT_EQ(response->status, 404) << path;
    EXPECT_EQ(response->body, "404 page not found\n") << path;
  }
  const std::optional<HttpResponse> post = Fetch(server->port(), "POST", "/metrics");
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->Header("allow"), "GET, HEAD");

  const std::optional<HttpResponse> head = Fetch(server->port(), "HEAD", "/metrics");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-length"), "5");
  EXPECT_EQ(head->body, "");
  EXPECT_EQ(renders.load(), 1);  // HEAD renders (for the length), the others do not
}

TEST(MetricsHttpServerTest, CustomPathAndLargeBody) {
  std::string big;
  for (int i = 0; big.size() < (3 << 20); ++i) absl::StrAppend(&big, "m{i=\"", i, "\"} ", i, "\n");
  MetricsHttpServer::Options options;
  options.path = "/prometheus";
  std::unique_ptr<MetricsHttpServer> server = StartOrDie(options, [&] { return big; });
  ASSERT_NE(server, nullptr);
  const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/prometheus");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body.size(), big.size());
  EXPECT_TRUE(response->body == big);
  const std::optional<HttpResponse> old = Fetch(server->port(), "GET", "/metrics");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->status, 404);
}

TEST(MetricsHttpServerTest, RenderThatThrowsIs500) {
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie({}, []() -> std::string { throw std::runtime_error("boom"); });
  ASSERT_NE(server, nullptr);
  const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/metrics");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->body, "500 rendering the metrics failed\n");
}

// Concurrent scrapes are served; renders never overlap.
TEST(MetricsHttpServerTest, RendersOneAtATime) {
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> renders{0};
  MetricsHttpServer::Options options;
  options.num_threads = 4;
  std::unique_ptr<MetricsHttpServer> server = StartOrDie(options, [&] {
    if (inside.fetch_add(1) != 0) ++overlaps;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    inside.fetch_sub(1);
    ++renders;
    return std::string("up 1\n");
  });
  ASSERT_NE(server, nullptr);
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        std::optional<HttpResponse> r = Fetch(server->port(), "GET", "/metrics");
        if (r.has_value() && r->status == 200 && r->body == "up 1\n") ++ok;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(ok.load(), 20);
  EXPECT_EQ(renders.load(), 20);
  EXPECT_EQ(overlaps.load(), 0);
}

// Connections that send their request slowly (slowloris: a header line every
// 100 ms, never the blank line) or nothing at all each hold a worker until
// the request timeout. With the defaults, two slowloris and 20 idle
// connections leave workers free, and a scrape behind them is answered
// within 1 s (with 2 workers and a 10 s timeout it waited 10 s).
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

// Issue 40 item 4 over a socket: the headers a browser sends for another
// site's form reach the admin rules, and the documented curl command works.
TEST(MetricsHttpServerTest, AdminRefusesAnotherSitesForm) {
  std::atomic<int> commands{0};
  MetricsHttpServer::Options options;
  options.admin.enabled = true;
  options.admin.control = [&](const BreakerCommandRequest&) {
    ++commands;
    return absl::OkStatus();
  };
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie(options, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  const std::string body = "channel=c&method=%2Fs.S%2FStore&command=force_open";
  const std::string form = absl::StrCat(
      "POST /admin/breaker HTTP/1.1\r\nHost: 127.0.0.1:", server->port(),
      "\r\nOrigin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ",
      body.size(), "\r\nConnection: close\r\n\r\n", body);
  std::optional<HttpResponse> response = Exchange(server->port(), form);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 403) << response->body;
  const std::string rebound = absl::StrCat(
      "POST /admin/breaker?", body, " HTTP/1.1\r\nHost: attacker.example:", server->port(),
      "\r\nX-Resilience-Admin: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  response = Exchange(server->port(), rebound);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 403) << response->body;
  EXPECT_EQ(commands.load(), 0);
  // curl -X POST -H 'X-Resilience-Admin: 1' 'http://127.0.0.1:PORT/admin/breaker?...'
  const std::string curl = absl::StrCat(
      "POST /admin/breaker?", body, " HTTP/1.1\r\nHost: 127.0.0.1:", server->port(),
      "\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\nX-Resilience-Admin: 1\r\n\r\n");
  response = Exchange(server->port(), curl);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(commands.load(), 1);
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
    const int left = static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
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
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie({}, [] { return std::string("up 1\n"); });
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

// A connection that sends nothing is closed after request_timeout, and a
// request that trickles in past it too.
TEST(MetricsHttpServerTest, IdleConnectionsAreClosedAfterTheRequestTimeout) {
  MetricsHttpServer::Options options;
  options.request_timeout = absl::Milliseconds(200);
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie(options, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL), 23);
  const absl::Time start = absl::Now();
  char byte;
  EXPECT_EQ(recv(fd, &byte, 1, 0), 0);  // closed unanswered (the socket waits 10 s at most)
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(150));
  EXPECT_LT(took, absl::Seconds(5));
  close(fd);
}

TEST(MetricsHttpServerTest, StopClosesThePort) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie({}, [] { return std::string(); });
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const std::optional<HttpResponse> empty = Fetch(port, "GET", "/metrics");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->status, 200);
  EXPECT_EQ(empty->Header("content-length"), "0");
  // civetweb's listener polls in 2 s slices; Stop() does not wait them out.
  const absl::Time before = absl::Now();
  server->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  server->Stop();  // idempotent
  EXPECT_EQ(Connect(port), -1);
  server.reset();  // and the destructor after Stop()
}

TEST(MetricsHttpServerTest, AllInterfaces) {
  MetricsHttpServer::Options options;
  options.bind_address = "0.0.0.0";
  std::unique_ptr<MetricsHttpServer> server =
      StartOrDie(options, [] { return std::string("up 1\n"); });
  ASSERT_NE(server, nullptr);
  const std::optional<HttpResponse> response = Fetch(server->port(), "GET", "/metrics");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST(MetricsHttpServerTest, PortInUseIsUnavailable) {
  std::unique_ptr<MetricsHttpServer> first = StartOrDie({}, [] { return std::string(); });
  ASSERT_NE(first, nullptr);
  MetricsHttpServer::Options options;
  options.port = first->port();
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> second =
      MetricsHttpServer::Start(options, [] { return std::string(); });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(absl::StrCat("127.0.0.1:", first->port())));
  // The first one still serves.
  const std::optional<HttpResponse> response = Fetch(first->port(), "GET", "/metrics");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST(MetricsHttpServerTest, BadOptions) {
  const auto start = [](MetricsHttpServer::Options options) {
    return MetricsHttpServer::Start(std::move(options), [] { return std::string(); }).status();
  };
  MetricsHttpServer::Options options;
  options.bind_address = "localhost";
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options.bind_address = "127.0.0.1:80,8080";  // no civetweb syntax gets through
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options.bind_address = "::1";
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.port = 70000;
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.path = "metrics";
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.num_threads = 0;
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.request_timeout = absl::ZeroDuration();
  EXPECT_EQ(start(options).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricsHttpServer::Start({}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Servers come and go, several at once (civetweb's library state is shared).
TEST(MetricsHttpServerTest, SeveralServersAtOnce) {
  std::vector<std::unique_ptr<MetricsHttpServer>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(StartOrDie({}, [i] { return absl::StrCat("server ", i, "\n"); }));
    ASSERT_NE(servers.back(), nullptr);
  }
  for (int i = 0; i < 3; ++i) {
    const std::optional<HttpResponse> response = Fetch(servers[i]->port(), "GET", "/metrics");
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->body, absl::StrCat("server ", i, "\n"));
  }
  servers.erase(servers.begin());
  std::unique_ptr<MetricsHttpServer> later = StartOrDie({}, [] { return std::string("later\n"); });
  ASSERT_NE(later, nullptr);
  const std::optional<HttpResponse> response = Fetch(later->port(), "GET", "/metrics");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "later\n");
}

}  // namespace
}  // namespace resilience
