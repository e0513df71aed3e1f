// OperationsRoutes without sockets: the status page's two forms and their
// rates, and every rule of the admin endpoint (off by default, loopback
// only by default, the token, the fields, what the control callback says).

#include "src/metrics_http/operations_routes.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// An admin request as the documented curl command sends it (the custom
// header, Host with the served port, no Origin).
HttpRequest Post(std::string query, std::string peer = "127.0.0.1") {
  HttpRequest r;
  r.method = "POST";
  r.path = "/admin/breaker";
  r.query = std::move(query);
  r.peer_address = std::move(peer);
  r.peer_port = 40000;
  r.server_port = 9464;
  r.host = "127.0.0.1:9464";
  r.admin_header = true;
  return r;
}

// What a browser sends for a page's <form method=post action=
// "http://127.0.0.1:9464/admin/breaker?..."> on evil.example.
HttpRequest CrossSiteForm() {
  HttpRequest r = Post("channel=c&method=%2Fm&command=force_open");
  r.admin_header = false;
  r.content_type = "application/x-www-form-urlencoded";
  r.body = "channel=c&method=%2Fm&command=force_open";
  r.origin = "http://evil.example";
  r.sec_fetch_site = "cross-site";
  return r;
}

class OperationsRoutesTest : public ::testing::Test {
 protected:
  OperationsRoutesTest() {
    options_.admin.enabled = true;
    options_.admin.control = [this](const BreakerCommandRequest& r) {
      requests_.push_back(r);
      return answer_;
    };
  }
  // The status callback: one client row with *calls calls, at *now.
  void ReportOneRow(const int64_t* calls, const absl::Time* now) {
    options_.status = [calls, now] {
      StatusReport r;
      r.generated_at = *now;
      ClientMethodStatus c;
      c.channel = "ch";
      c.method = "/m";
      c.calls = *calls;
      r.client_methods.push_back(c);
      return r;
    };
  }

  MetricsHttpServer::Options options_;
  std::vector<BreakerCommandRequest> requests_;
  absl::Status answer_;
};

TEST_F(OperationsRoutesTest, OffUnlessAskedFor) {
  MetricsHttpServer::Options plain;
  OperationsRoutes routes(plain);
  HttpRequest get;
  get.method = "GET";
  get.path = "/status";
  EXPECT_FALSE(routes.Handle(get).has_value());
  EXPECT_FALSE(routes.Handle(Post("channel=c&method=m&command=reset")).has_value());
}

TEST_F(OperationsRoutesTest, StatusPageAndJsonWithRatesFromTheRequestBefore) {
  int64_t calls = 0;
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  ReportOneRow(&calls, &now);
  OperationsRoutes routes(options_);
  HttpRequest get;
  get.method = "GET";
  get.path = "/status";
  std::optional<HttpResponse> html = routes.Handle(get);
  ASSERT_TRUE(html.has_value());
  EXPECT_EQ(html->status, 200);
  EXPECT_EQ(html->content_type, "text/html; charset=utf-8");
  EXPECT_THAT(html->body, HasSubstr("data-method=\"/m\""));
  calls = 30;
  now += absl::Seconds(3);
  get.path = "/status.json";
  std::optional<HttpResponse> json = routes.Handle(get);
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(json->content_type, "application/json");
  EXPECT_THAT(json->body, HasSubstr("\"calls_per_second\":10"));
  get.method = "POST";
  EXPECT_EQ(routes.Handle(get)->status, 405);
  get.method = "HEAD";
  EXPECT_TRUE(routes.Handle(get)->body.empty());
}

// Issue 40 item 12: the first status request's rates were null. They
// count from the server's start (the routes' construction).
TEST_F(OperationsRoutesTest, FirstRequestHasRatesSinceTheStart) {
  int64_t calls = 4;
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  ReportOneRow(&calls, &now);
  OperationsRoutes routes(options_);
  calls = 24;
  now += absl::Seconds(4);
  HttpRequest get;
  get.method = "GET";
  get.path = "/status.json";
  std::optional<HttpResponse> json = routes.Handle(get);
  ASSERT_TRUE(json.has_value());
  EXPECT_THAT(json->body, HasSubstr("\"calls_per_second\":5"));
}

TEST_F(OperationsRoutesTest, AdminCommandReachesTheCallback) {
  OperationsRoutes routes(options_);
  std::optional<HttpResponse> r =
      routes.Handle(Post("channel=ipv4%3A127.0.0.1%3A5&method=%2Fcache.v1.CacheService%2FGet"
                         "&command=force_open"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("\"applied\":true"));
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].channel, "ipv4:127.0.0.1:5");
  EXPECT_EQ(requests_[0].method, "/cache.v1.CacheService/Get");
  EXPECT_EQ(requests_[0].command, BreakerCommand::kForceOpen);
  EXPECT_EQ(requests_[0].origin, "admin endpoint, peer 127.0.0.1:40000");
  EXPECT_EQ(requests_[0].endpoint, "");
  // An endpoint's breaker: the optional field is passed on and answered.
  r = routes.Handle(Post("channel=c&method=%2Fm&command=reset&endpoint=ipv4%3A10.0.0.2%3A50051"));
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("\"endpoint\":\"ipv4:10.0.0.2:50051\""));
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_EQ(requests_[1].endpoint, "ipv4:10.0.0.2:50051");
}

TEST_F(OperationsRoutesTest, FormBodyWorksToo) {
  OperationsRoutes routes(options_);
  HttpRequest r = Post("");
  r.content_type = "application/x-www-form-urlencoded";
  r.body = "channel=c&method=%2Fm&command=reset";
  EXPECT_EQ(routes.Handle(r)->status, 200);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].command, BreakerCommand::kReset);
  // A body of another type is not read as a form.
  r.content_type = "text/plain";
  EXPECT_EQ(routes.Handle(r)->status, 400);
}

TEST_F(OperationsRoutesTest, RemotePeersRefusedUnlessAllowed) {
  OperationsRoutes routes(options_);
  std::optional<HttpResponse> r = routes.Handle(Post("channel=c&method=m&command=reset", "10.1.2.3"));
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("10.1.2.3"));
  EXPECT_TRUE(requests_.empty());
  options_.admin.allow_remote = true;
  OperationsRoutes open(options_);
  EXPECT_EQ(open.Handle(Post("channel=c&method=m&command=reset", "10.1.2.3"))->status, 200);
}

TEST_F(OperationsRoutesTest, TokenRequiredWhenSet) {
  options_.admin.token = "s3cret";
  OperationsRoutes routes(options_);
  HttpRequest r = Post("channel=c&method=m&command=reset");
  EXPECT_EQ(routes.Handle(r)->status, 401);
  r.authorization = "Bearer wrong!";
  EXPECT_EQ(routes.Handle(r)->status, 401);
  r.authorization = "s3cret";  // no scheme
  EXPECT_EQ(routes.Handle(r)->status, 401);
  EXPECT_TRUE(requests_.empty());
  r.authorization = "Bearer s3cret";
  EXPECT_EQ(routes.Handle(r)->status, 200);
  EXPECT_EQ(requests_.size(), 1u);
}

// Issue 40 item 4: with --admin and no token, a cross-site form POST forced
// a breaker open (200 {"applied":true}), and so did a request with a
// foreign Host (DNS rebinding).
TEST_F(OperationsRoutesTest, CrossSiteFormIsRefused) {
  OperationsRoutes routes(options_);
  std::optional<HttpResponse> r = routes.Handle(CrossSiteForm());
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_THAT(r->body, HasSubstr("Sec-Fetch-Site: cross-site"));
  // Each mark of a web page alone is enough.
  HttpRequest no_fetch_metadata = CrossSiteForm();  // an older browser
  no_fetch_metadata.sec_fetch_site.clear();
  r = routes.Handle(no_fetch_metadata);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_THAT(r->body, HasSubstr("Origin: http://evil.example"));
  HttpRequest no_origin = no_fetch_metadata;  // Origin withheld (a referrer policy)
  no_origin.origin.clear();
  r = routes.Handle(no_origin);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_THAT(r->body, HasSubstr("must carry the header \\\"X-Resilience-Admin: 1\\\""));
  HttpRequest with_header = CrossSiteForm();  // e.g. a script's fetch()
  with_header.admin_header = true;
  EXPECT_EQ(routes.Handle(with_header)->status, 403);
  HttpRequest same_site = with_header;  // another port of this host
  same_site.sec_fetch_site = "same-site";
  EXPECT_EQ(routes.Handle(same_site)->status, 403);
  HttpRequest null_origin = with_header;  // a sandboxed frame
  null_origin.sec_fetch_site.clear();
  null_origin.origin = "null";
  EXPECT_EQ(routes.Handle(null_origin)->status, 403);
  EXPECT_TRUE(requests_.empty());
  // The status page's own origin, with the header: obeyed.
  HttpRequest same_origin = Post("channel=c&method=%2Fm&command=reset");
  same_origin.origin = "http://127.0.0.1:9464";
  same_origin.sec_fetch_site = "same-origin";
  EXPECT_EQ(routes.Handle(same_origin)->status, 200);
  EXPECT_EQ(requests_.size(), 1u);
}

TEST_F(OperationsRoutesTest, ForeignHostIsRefused) {
  OperationsRoutes routes(options_);
  HttpRequest rebound = Post("channel=c&method=%2Fm&command=force_open");
  rebound.host = "attacker.example:9464";
  std::optional<HttpResponse> r = routes.Handle(rebound);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_THAT(r->body, HasSubstr("Host \\\"attacker.example:9464\\\" is not this server"));
  rebound.host = "127.0.0.1:8080";  // another port: another origin
  EXPECT_EQ(routes.Handle(rebound)->status, 403);
  EXPECT_TRUE(requests_.empty());
  for (const char* host : {"127.0.0.1:9464", "localhost:9464", "LocalHost:9464", "[::1]:9464"}) {
    rebound.host = host;
    EXPECT_EQ(routes.Handle(rebound)->status, 200) << host;
  }
  // Remote admin (behind a proxy, under any name) is the operator's choice.
  options_.admin.allow_remote = true;
  OperationsRoutes remote(options_);
  rebound.host = "admin.internal.example";
  EXPECT_EQ(remote.Handle(rebound)->status, 200);
}

TEST_F(OperationsRoutesTest, TokenStandsForTheHeader) {
  options_.admin.token = "s3cret";
  OperationsRoutes routes(options_);
  HttpRequest r = Post("channel=c&method=%2Fm&command=reset");
  r.admin_header = false;
  r.authorization = "Bearer s3cret";
  EXPECT_EQ(routes.Handle(r)->status, 200);
  // The token does not let another site's page in.
  r.origin = "http://evil.example";
  EXPECT_EQ(routes.Handle(r)->status, 403);
  EXPECT_EQ(requests_.size(), 1u);
}

TEST_F(OperationsRoutesTest, BadRequestsNameWhatIsWrong) {
  OperationsRoutes routes(options_);
  std::optional<HttpResponse> r = routes.Handle(Post("channel=c&command=reset"));
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("field 'method' is missing"));
  r = routes.Handle(Post("channel=c&method=m&command=open"));
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("command 'open' is not one of"));
  r = routes.Handle(Post("channel=c&method=%zz&command=reset"));
  EXPECT_EQ(r->status, 400);
  HttpRequest get = Post("channel=c&method=m&command=reset");
  get.method = "GET";
  EXPECT_EQ(routes.Handle(get)->status, 405);
  EXPECT_TRUE(requests_.empty());
}

TEST_F(OperationsRoutesTest, CallbackErrorsBecomeHttpStatuses) {
  OperationsRoutes routes(options_);
  answer_ = absl::NotFoundError("no policy gives method '/x' a circuit breaker");
  std::optional<HttpResponse> r = routes.Handle(Post("channel=c&method=%2Fx&command=reset"));
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("no policy gives method '/x' a circuit breaker"));
}

// Issue 40 item 11: what the request's method decodes to (bytes that are
// not UTF-8, a line break) is passed on as it is, and the answer that
// names it stays valid UTF-8 JSON on one line.
TEST_F(OperationsRoutesTest, AnswersStayValidJsonWhateverTheRequestHolds) {
  OperationsRoutes routes(options_);
  answer_ = absl::NotFoundError("no breaker on method '/a/\xFF\xFE\nFORGED'");
  std::optional<HttpResponse> r =
      routes.Handle(Post("channel=c&method=%2Fa%2F%FF%FE%0AFORGED&command=reset"));
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].method, "/a/\xFF\xFE\nFORGED");
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("/a/\\\\xFF\\\\xFE\\nFORGED"));
  EXPECT_EQ(r->body.find('\xFF'), std::string::npos);
  EXPECT_EQ(r->body.find('\n'), r->body.size() - 1);  // only the final newline
}

TEST(OperationsRoutesStaticTest, Loopback) {
  EXPECT_TRUE(OperationsRoutes::IsLoopback("127.0.0.1"));
  EXPECT_TRUE(OperationsRoutes::IsLoopback("127.3.2.1"));
  EXPECT_TRUE(OperationsRoutes::IsLoopback("::1"));
  EXPECT_TRUE(OperationsRoutes::IsLoopback("::ffff:127.0.0.1"));
  EXPECT_FALSE(OperationsRoutes::IsLoopback("10.0.0.1"));
  EXPECT_FALSE(OperationsRoutes::IsLoopback("127.evil.example"));
  EXPECT_FALSE(OperationsRoutes::IsLoopback("::ffff:10.0.0.1"));
  EXPECT_FALSE(OperationsRoutes::IsLoopback(""));
}

TEST(OperationsRoutesStaticTest, LocalHost) {
  EXPECT_TRUE(OperationsRoutes::IsLocalHost("127.0.0.1:9464", 9464));
  EXPECT_TRUE(OperationsRoutes::IsLocalHost("localhost:9464", 9464));
  EXPECT_TRUE(OperationsRoutes::IsLocalHost("[::1]:9464", 9464));
  EXPECT_TRUE(OperationsRoutes::IsLocalHost("localhost", 80));
  EXPECT_TRUE(OperationsRoutes::IsLocalHost("[::1]", 80));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("localhost", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("127.0.0.1:9465", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("evil.example:9464", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("localhost.evil.example:9464", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("127.0.0.1.nip.io:9464", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("127.0.0.1:x", 9464));
  EXPECT_FALSE(OperationsRoutes::IsLocalHost("", 9464));
}

TEST(OperationsRoutesStaticTest, FormFields) {
  EXPECT_EQ(OperationsRoutes::FormField("a=1&b=x+y%2F", "b"), "x y/");
  EXPECT_EQ(OperationsRoutes::FormField("a=1", "b"), std::nullopt);
  EXPECT_EQ(OperationsRoutes::FormField("a", "a"), "");
  EXPECT_EQ(OperationsRoutes::FormField("a=%4", "a"), std::nullopt);
}

// POST /admin/enforcement: the same checks as the breaker commands (one
// code path), then the parsed request reaches admin.enforcement.
TEST_F(OperationsRoutesTest, EnforcementRouteParsesAndGuards) {
  std::vector<EnforcementRequest> got;
  options_.admin.enforcement = [&got](const EnforcementRequest& r) {
    got.push_back(r);
    return absl::OkStatus();
  };
  OperationsRoutes routes(options_);
  const auto post = [](std::string query, std::string peer = "127.0.0.1") {
    HttpRequest r = Post(std::move(query), std::move(peer));
    r.path = "/admin/enforcement";
    return r;
  };
  std::optional<HttpResponse> r =
      routes.Handle(post("channel=c&method=%2Fm&policy=breaker&mode=shadow"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("\"mode\":\"shadow\""));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].channel, "c");
  EXPECT_EQ(got[0].server, "");
  EXPECT_EQ(got[0].method, "/m");
  EXPECT_EQ(got[0].policy, EnforcedPolicy::kBreaker);
  EXPECT_EQ(got[0].mode, EnforcementMode::kShadow);
  EXPECT_EQ(got[0].origin, "admin endpoint, peer 127.0.0.1:40000");
  // A server's policy, addressed by `server`.
  r = routes.Handle(post("server=s&method=%2Fm&policy=throttle&mode=enforce"));
  EXPECT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].server, "s");
  EXPECT_EQ(got[1].policy, EnforcedPolicy::kThrottle);
  // Bad fields name what is wrong.
  r = routes.Handle(post("channel=c&method=%2Fm&policy=breakr&mode=shadow"));
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("policy 'breakr' is not one of breaker, bulkhead"));
  r = routes.Handle(post("channel=c&method=%2Fm&policy=breaker&mode=dry"));
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("mode 'dry' is not one of enforce, shadow, off"));
  r = routes.Handle(post("method=%2Fm&policy=breaker&mode=off"));
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("'channel' and 'server'"));
  // The admin endpoint's protections hold here too.
  EXPECT_EQ(routes.Handle(post("channel=c&method=%2Fm&policy=breaker&mode=off", "10.1.2.3"))
                ->status,
            403);
  HttpRequest forged = post("channel=c&method=%2Fm&policy=breaker&mode=off");
  forged.admin_header = false;
  EXPECT_EQ(routes.Handle(forged)->status, 403);
  forged = post("channel=c&method=%2Fm&policy=breaker&mode=off");
  forged.origin = "http://evil.example";
  EXPECT_EQ(routes.Handle(forged)->status, 403);
  HttpRequest get = post("channel=c&method=%2Fm&policy=breaker&mode=off");
  get.method = "GET";
  EXPECT_EQ(routes.Handle(get)->status, 405);
  EXPECT_EQ(got.size(), 2u);  // none of those reached the callback
}

}  // namespace
}  // namespace resilience
