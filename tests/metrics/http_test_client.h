// A plain HTTP/1.x client for the MetricsHttpServer tests: whole requests
// over a fresh loopback connection each, and answers parsed.

#ifndef GRPC_RESILIENCE_TESTS_METRICS_HTTP_TEST_CLIENT_H_
#define GRPC_RESILIENCE_TESTS_METRICS_HTTP_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "grpc_resilience/metrics_http.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback_socket.h"

namespace resilience::testing {

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
inline int Connect(int port) {
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
inline std::optional<HttpResponse> Exchange(int port, const std::string& request) {
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
inline std::optional<HttpResponse> Fetch(int port, absl::string_view method, absl::string_view path) {
  return Exchange(port, absl::StrCat(method, " ", path,
                                     " HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n"));
}

inline std::unique_ptr<MetricsHttpServer> StartOrDie(MetricsHttpServer::Options options,
                                              MetricsHttpServer::RenderFunction render) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start(std::move(options), std::move(render));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}


}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_METRICS_HTTP_TEST_CLIENT_H_
