// MetricsHttpServer over real sockets, with a plain HTTP/1.x client
// (http_test_client.h): what it answers where, rendering, stopping, options.
// Many connections at once: metrics_http_connections_test.cc.

#include "grpc_resilience/metrics_http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "tests/metrics/http_test_client.h"
#include "tests/metrics/sample_exposition.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using testing::Connect;
using testing::Exchange;
using testing::Fetch;
using testing::HttpResponse;
using testing::StartOrDie;

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
  const std::string form =
      absl::StrCat("POST /admin/breaker HTTP/1.1\r\nHost: 127.0.0.1:", server->port(),
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
  const std::string curl =
      absl::StrCat("POST /admin/breaker?", body, " HTTP/1.1\r\nHost: 127.0.0.1:", server->port(),
                   "\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\nX-Resilience-Admin: 1\r\n\r\n");
  response = Exchange(server->port(), curl);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(commands.load(), 1);
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

// Servers come and go, several at once.
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
