// The sinks of events (LogEvents, RecentEvents) and the operator's event
// line: what an admin request puts into an event stays one line of valid
// UTF-8 (issue 40 item 11), a log line says when (item 13), and a forced
// breaker says "forced open" (item 13).

#include <stdio.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpc_resilience/events.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// What ControlBreaker() reports for the admin request
// "method=/a%0Acache_client: breaker FORGED%FF&command=force_open".
OperatorEvent ForgingCommand() {
  OperatorEvent e;
  e.channel = "127.0.0.1:50051";
  e.method = "/a\ncache_client: breaker FORGED\xFF";
  e.command = BreakerCommand::kForceOpen;
  e.origin = "admin endpoint, peer 127.0.0.1:40000";
  e.error = "no policy gives method '" + e.method + "' a circuit breaker";
  return e;
}

// Everything LogEvents writes for `emit`.
template <typename Emit>
std::string Logged(Emit&& emit) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  {
    LogEvents log(out, "cache_client: ");
    emit(log);
  }
  fclose(out);
  std::string text(buffer, size);
  free(buffer);
  return text;
}

TEST(LogEventsTest, ARequestCannotForgeALine) {
  const std::string text = Logged([](LogEvents& log) { log.OnOperatorAction(ForgingCommand()); });
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << text;
  EXPECT_THAT(lines[0], HasSubstr("/a\\ncache_client: breaker FORGED\\xFF"));
  EXPECT_THAT(text, Not(HasSubstr("\xFF")));
}

TEST(LogEventsTest, EachLineStartsWithItsTime) {
  const absl::Time before = absl::Now();
  const std::string text = Logged([](LogEvents& log) {
    OperatorEvent e = ForgingCommand();
    e.method = "/s.S/Store";
    log.OnOperatorAction(e);
  });
  // "cache_client: 2026-12-07T14:03:59.128Z operator ..."
  ASSERT_THAT(text, StartsWith("cache_client: "));
  const absl::string_view rest = absl::string_view(text).substr(14);
  const size_t space = rest.find(' ');
  ASSERT_NE(space, absl::string_view::npos) << text;
  const std::string stamp(rest.substr(0, space));
  EXPECT_EQ(stamp.size(), 24u) << stamp;  // milliseconds, 'Z'
  absl::Time at;
  std::string error;
  ASSERT_TRUE(absl::ParseTime(LogEvents::kTimestampFormat, stamp, absl::UTCTimeZone(), &at, &error))
      << stamp << ": " << error;
  EXPECT_GE(at, before - absl::Seconds(1));
  EXPECT_LE(at, absl::Now() + absl::Seconds(1));
  EXPECT_THAT(std::string(rest.substr(space + 1)), StartsWith("operator force_open of breaker"));
}

TEST(RecentEventsTest, KeepsTheTextEscaped) {
  RecentEvents recent(10);
  recent.OnOperatorAction(ForgingCommand());
  StatusReport report;
  recent.AppendStatus(report);
  ASSERT_EQ(report.recent_events.size(), 1u);
  const std::string& text = report.recent_events[0].text;
  EXPECT_THAT(text, HasSubstr("/a\\ncache_client: breaker FORGED\\xFF"));
  EXPECT_THAT(text, Not(HasSubstr("\n")));
  EXPECT_THAT(report.ToJson(), Not(HasSubstr("\xFF")));
}

TEST(FormatEventTest, AForcedBreakerSaysForced) {
  OperatorEvent e = ForgingCommand();
  e.method = "/s.S/Store";
  e.applied = true;
  e.snapshot.mode = BreakerMode::kForceOpen;
  e.snapshot.state = BreakerState::kClosed;
  EXPECT_THAT(FormatEvent(e), HasSubstr(": now forced open (own state closed)"));
  e.command = BreakerCommand::kForceClosed;
  e.snapshot.mode = BreakerMode::kForceClosed;
  e.snapshot.state = BreakerState::kOpen;
  EXPECT_THAT(FormatEvent(e), HasSubstr(": now forced closed (own state open)"));
  e.command = BreakerCommand::kAutomatic;
  e.snapshot.mode = BreakerMode::kNormal;
  EXPECT_THAT(FormatEvent(e), HasSubstr(": now open"));
}

}  // namespace
}  // namespace resilience
