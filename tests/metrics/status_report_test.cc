// StatusReport: its rates between two reports, its JSON (parsed back with
// protobuf's JSON parser) and its self-contained HTML page.

#include "grpc_resilience/status_report.h"

#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

StatusReport Sample() {
  StatusReport r;
  r.generated_at = absl::FromUnixSeconds(1'800'000'000);
  ClientMethodStatus c;
  c.channel = "ipv4:127.0.0.1:1,127.0.0.1:2";
  c.method = "/cache.v1.CacheService/Get";
  c.breaker_kind = "three_state";
  BreakerSnapshot b;
  b.state = BreakerState::kOpen;
  b.counts.success = 5;
  b.counts.failure = 15;
  b.failure_rate = 0.75;
  b.time_in_state = absl::Seconds(3);
  c.breaker = b;
  c.calls = 100;
  c.rejected_locally = 40;
  EndpointStatus bad{"ipv4:10.0.0.3:50051", b, 30, 12};
  EndpointStatus good{"ipv4:10.0.0.1:50051", BreakerSnapshot(), 70, 0};
  good.breaker.mode = BreakerMode::kForceClosed;
  c.endpoints = {good, bad};
  r.client_methods.push_back(c);
  ClientMethodStatus plain;
  plain.channel = c.channel;
  plain.method = "/cache.v1.CacheService/Dump";
  plain.calls = 7;
  r.client_methods.push_back(plain);
  ServerMethodStatus s;
  s.method = "/cache.v1.CacheService/Store";
  s.in_flight = 8;
  s.concurrency_limit = 8;
  s.adaptive_limit = true;
  s.admitted = 50;
  s.rejected = 10;
  r.server_methods.push_back(s);
  r.retry_throttles.push_back(RetryThrottleStatus{c.channel, 3.5, 10});
  r.recent_events.push_back(StatusEvent{r.generated_at, "breaker <Get> opened & \"quoted\""});
  return r;
}

google::protobuf::Struct Parse(const std::string& json) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return parsed;
}

TEST(StatusReportTest, RatesComeFromTheSameRowOfThePreviousReport) {
  StatusReport before = Sample();
  StatusReport now = Sample();
  now.generated_at = before.generated_at + absl::Seconds(2);
  now.client_methods[0].calls += 20;
  now.client_methods[0].rejected_locally += 10;
  now.server_methods[0].admitted += 4;
  now.server_methods[0].rejected += 6;
  ClientMethodStatus fresh;  // not in the previous report: no call then
  fresh.channel = "other";
  fresh.method = "/cache.v1.CacheService/Get";
  fresh.calls = 6;
  now.client_methods.push_back(fresh);
  now.RatesSince(before);
  EXPECT_EQ(now.client_methods[0].calls_per_second, 10.0);
  EXPECT_EQ(now.client_methods[0].rejections_per_second, 5.0);
  EXPECT_EQ(now.client_methods[1].calls_per_second, 0.0);
  EXPECT_EQ(now.client_methods[2].calls_per_second, 3.0);  // was null (issue 40 item 12)
  EXPECT_EQ(now.server_methods[0].calls_per_second, 5.0);
  EXPECT_EQ(now.server_methods[0].rejections_per_second, 3.0);
}

// A counter that went down (a new channel under the same name) or no time
// passing gives no rate rather than a wrong one.
TEST(StatusReportTest, NoRateAcrossARestartOrWithoutTime) {
  StatusReport before = Sample();
  StatusReport now = Sample();
  now.RatesSince(before);  // same time
  EXPECT_EQ(now.client_methods[0].calls_per_second, std::nullopt);
  now.generated_at += absl::Seconds(1);
  now.client_methods[0].calls = 3;
  now.RatesSince(before);
  EXPECT_EQ(now.client_methods[0].calls_per_second, std::nullopt);
}

TEST(StatusReportTest, JsonCarriesEveryField) {
  const google::protobuf::Struct r = Parse(Sample().ToJson());
  const auto& clients = r.fields().at("client_methods").list_value();
  ASSERT_EQ(clients.values_size(), 2);
  const auto& get = clients.values(0).struct_value().fields();
  EXPECT_EQ(get.at("method").string_value(), "/cache.v1.CacheService/Get");
  const auto& breaker = get.at("breaker").struct_value().fields();
  EXPECT_EQ(breaker.at("state").string_value(), "open");
  EXPECT_EQ(breaker.at("mode").string_value(), "normal");
  EXPECT_EQ(breaker.at("kind").string_value(), "three_state");
  EXPECT_EQ(breaker.at("time_in_state_seconds").number_value(), 3);
  EXPECT_EQ(breaker.at("calls_in_window").number_value(), 20);
  EXPECT_EQ(breaker.at("failure_rate").number_value(), 0.75);
  EXPECT_EQ(get.at("rejected_locally").number_value(), 40);
  EXPECT_TRUE(get.at("calls_per_second").has_null_value());
  EXPECT_TRUE(clients.values(1).struct_value().fields().at("breaker").has_null_value());
  EXPECT_EQ(clients.values(1).struct_value().fields().at("endpoints").list_value().values_size(),
            0);
  const auto& endpoints = get.at("endpoints").list_value();
  ASSERT_EQ(endpoints.values_size(), 2);
  const auto& bad = endpoints.values(1).struct_value().fields();
  EXPECT_EQ(bad.at("endpoint").string_value(), "ipv4:10.0.0.3:50051");
  EXPECT_EQ(bad.at("breaker").struct_value().fields().at("state").string_value(), "open");
  EXPECT_EQ(bad.at("outcomes").number_value(), 30);
  EXPECT_EQ(bad.at("refused").number_value(), 12);
  EXPECT_EQ(endpoints.values(0).struct_value().fields().at("breaker").struct_value().fields().at(
                "mode").string_value(),
            "force_closed");
  const auto& store = r.fields().at("server_methods").list_value().values(0).struct_value().fields();
  EXPECT_EQ(store.at("concurrency_limit").number_value(), 8);
  EXPECT_TRUE(store.at("adaptive_limit").bool_value());
  const auto& throttle =
      r.fields().at("retry_throttles").list_value().values(0).struct_value().fields();
  EXPECT_EQ(throttle.at("tokens").number_value(), 3.5);
  EXPECT_EQ(r.fields().at("recent_events").list_value().values(0).struct_value().fields().at(
                "text").string_value(),
            "breaker <Get> opened & \"quoted\"");
  EXPECT_EQ(r.fields().at("generated_at").string_value(), "2027-01-15T08:00:00+00:00");
}

// Control characters and quotes in names stay valid JSON.
TEST(StatusReportTest, JsonEscapesWhatANameMayHold) {
  StatusReport r;
  ClientMethodStatus c;
  c.channel = std::string("a\"b\\c\nd\x01", 8);
  c.method = "/m";
  r.client_methods.push_back(c);
  const google::protobuf::Struct parsed = Parse(r.ToJson());
  EXPECT_EQ(parsed.fields().at("client_methods").list_value().values(0).struct_value().fields().at(
                "channel").string_value(),
            c.channel);
}

// Issue 40 item 11: an admin request with method=/a/%FF%FE made the event
// list, and so /status.json, invalid UTF-8 until 50 newer events pushed it
// out. Whatever a row or an event holds, the JSON is valid UTF-8 and the
// page has no raw line break or byte that is not UTF-8 in its text.
TEST(StatusReportTest, TextThatIsNotUtf8StaysValid) {
  StatusReport r;
  ClientMethodStatus c;
  c.channel = "ch";
  c.method = "/a/\xFF\xFE";
  r.client_methods.push_back(c);
  r.recent_events.push_back(
      StatusEvent{absl::UnixEpoch(), "operator force_open of breaker /a/\xFF\xFE\xC3\xA9 on ch"});
  const std::string json = r.ToJson();
  EXPECT_TRUE(google::protobuf::internal::IsStructurallyValidUTF8(json.data(),
                                                                  static_cast<int>(json.size())))
      << json;
  const google::protobuf::Struct parsed = Parse(json);
  const auto& row = parsed.fields().at("client_methods").list_value().values(0).struct_value();
  EXPECT_EQ(row.fields().at("method").string_value(), "/a/\\xFF\\xFE");
  const auto& event = parsed.fields().at("recent_events").list_value().values(0).struct_value();
  EXPECT_EQ(event.fields().at("text").string_value(),
            "operator force_open of breaker /a/\\xFF\\xFE\xC3\xA9 on ch");
  const std::string html = r.ToHtml();
  EXPECT_TRUE(google::protobuf::internal::IsStructurallyValidUTF8(html.data(),
                                                                  static_cast<int>(html.size())));
  EXPECT_THAT(html, HasSubstr("/a/\\xFF\\xFE\xC3\xA9 on ch"));
}

// Issue 40 item 13: a breaker forced open read "state closed, mode
// force_open" while it rejected every call.
TEST(StatusReportTest, AForcedBreakerSaysForced) {
  StatusReport r;
  ClientMethodStatus c;
  c.channel = "ch";
  c.method = "/s.S/Store";
  c.breaker_kind = "three_state";
  BreakerSnapshot b;
  b.mode = BreakerMode::kForceOpen;
  c.breaker = b;
  EndpointStatus e{"ipv4:10.0.0.1:1", b, 0, 0};
  e.breaker.mode = BreakerMode::kForceClosed;
  e.breaker.state = BreakerState::kOpen;
  c.endpoints = {e};
  r.client_methods.push_back(c);
  const std::string html = r.ToHtml();
  EXPECT_THAT(html, HasSubstr("<td class=state>forced open</td><td>force_open (own state "
                              "closed)</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=state>forced closed</td><td>force_closed (own state "
                              "open)</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<td class=state>closed</td>")));
}

TEST(StatusReportTest, HtmlIsSelfContainedAndMarksWhatBinds) {
  const std::string html = Sample().ToHtml(absl::Seconds(5));
  EXPECT_THAT(html, HasSubstr("<meta http-equiv=refresh content=\"5\">"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  // The open breaker's row, and the limit that binds (8 in flight of 8).
  EXPECT_THAT(html, HasSubstr("<tr class=\"open\" data-channel=\"ipv4:127.0.0.1:1,127.0.0.1:2\" "
                              "data-method=\"/cache.v1.CacheService/Get\">"));
  EXPECT_THAT(html, HasSubstr("<tr class=binding data-method=\"/cache.v1.CacheService/Store\">"));
  EXPECT_THAT(html, HasSubstr("8 (adaptive)"));
  EXPECT_THAT(html, HasSubstr("no breaker"));
  // One row per endpoint under its method, marked by its breaker.
  EXPECT_THAT(html, HasSubstr("<tr class=\"endpoint open\" data-channel=\"ipv4:127.0.0.1:1,"
                              "127.0.0.1:2\" data-method=\"/cache.v1.CacheService/Get\" "
                              "data-endpoint=\"ipv4:10.0.0.3:50051\">"));
  EXPECT_THAT(html, HasSubstr("<tr class=\"endpoint forced\""));
  EXPECT_THAT(html, HasSubstr("30 attempts, 12 not counted"));
  // An event's text is escaped, not markup.
  EXPECT_THAT(html, HasSubstr("breaker &lt;Get&gt; opened &amp; &quot;quoted&quot;"));
  EXPECT_THAT(Sample().ToHtml(absl::ZeroDuration()), Not(HasSubstr("http-equiv=refresh")));
}

TEST(StatusReportTest, EmptyReportSaysSo) {
  StatusReport r;
  const std::string html = r.ToHtml();
  EXPECT_THAT(html, HasSubstr("No method called yet."));
  EXPECT_THAT(html, Not(HasSubstr("<table")));
  Parse(r.ToJson());
}

}  // namespace
}  // namespace resilience
