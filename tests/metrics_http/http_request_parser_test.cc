// HttpRequestParser: when a request is whole, what it holds, and what is
// refused (with the status and a message saying why).

#include "src/metrics_http/http_request_parser.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using Kind = HttpRequestParser::Result::Kind;

TEST(HttpRequestParserTest, AWholeGet) {
  const std::string raw =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent:  Prometheus/2.42 \r\n\r\n";
  for (size_t cut = 0; cut < raw.size(); ++cut) {
    EXPECT_EQ(HttpRequestParser::Parse(raw.substr(0, cut)).kind, Kind::kIncomplete) << cut;
  }
  const HttpRequestParser::Result r = HttpRequestParser::Parse(raw);
  ASSERT_EQ(r.kind, Kind::kComplete) << r.message;
  EXPECT_EQ(r.request.method, "GET");
  EXPECT_EQ(r.request.path, "/metrics");
  EXPECT_EQ(r.request.query, "x=1");
  EXPECT_EQ(r.request.version, "HTTP/1.1");
  EXPECT_EQ(r.request.Header("host"), "127.0.0.1:9464");
  EXPECT_EQ(r.request.Header("user-agent"), "Prometheus/2.42");
  EXPECT_EQ(r.request.Header("origin"), std::nullopt);
}

TEST(HttpRequestParserTest, APostWithItsBody) {
  const std::string head =
      "POST /admin/breaker HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Content-Length: 9\r\nExpect: 100-continue\r\n\r\n";
  HttpRequestParser::Result r = HttpRequestParser::Parse(head + "a=1");
  EXPECT_EQ(r.kind, Kind::kIncomplete);
  EXPECT_TRUE(r.wants_continue);
  r = HttpRequestParser::Parse(head + "a=1&b=2&c");
  ASSERT_EQ(r.kind, Kind::kComplete) << r.message;
  EXPECT_EQ(r.request.body, "a=1&b=2&c");
  // A POST without a body: whole at its head.
  EXPECT_EQ(HttpRequestParser::Parse("POST /x HTTP/1.1\r\n\r\n").kind, Kind::kComplete);
}

TEST(HttpRequestParserTest, RefusedWithAReason) {
  const auto refused = [](const std::string& raw) { return HttpRequestParser::Parse(raw); };
  HttpRequestParser::Result r = refused("GET metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.kind, Kind::kBad);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.message, HasSubstr("request line"));
  EXPECT_EQ(refused("GET /metrics\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /metrics HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(refused("GET /m HTTP/1.1\r\nno colon\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /m HTTP/1.1\r\n folded: x\r\n\r\n").status, 400);
  EXPECT_EQ(refused("POST /m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").status, 411);
  EXPECT_EQ(refused("POST /m HTTP/1.1\r\nContent-Length: -1\r\n\r\n").status, 400);
  EXPECT_EQ(refused("POST /m HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").status,
            400);
  r = refused("POST /m HTTP/1.1\r\nContent-Length: 65537\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_THAT(r.message, HasSubstr("65537"));
  // A head that never ends is refused once it passes the bound.
  const std::string endless = "GET /m HTTP/1.1\r\nX-Pad: " + std::string(17000, 'a');
  EXPECT_EQ(refused(endless).status, 431);
}

}  // namespace
}  // namespace resilience
