// The real-gRPC scenarios' load generator against a real guarded server: an
// arrival it reaches more than a deadline late is counted, not sent; the
// calls it sends are answered and classified as their client saw them.

#include "experiments/overload/open_loop_sender.h"

#include <atomic>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace overload {
namespace {

TEST(OpenLoopSenderTest, ALateArrivalIsCountedNotSentAndEachAnswerIsClassified) {
  std::atomic<int> prepared{0}, ok{0}, rejected{0}, late{0};
  const auto prepare = [&](grpc::ClientContext&) { prepared.fetch_add(1); };
  const auto answered = [&](OpenLoopSender::Answer answer) {
    switch (answer) {
      case OpenLoopSender::Answer::kOkInDeadline:
        ok.fetch_add(1);
        break;
      case OpenLoopSender::Answer::kRejected:
        rejected.fetch_add(1);
        break;
      case OpenLoopSender::Answer::kLate:
        late.fetch_add(1);
        break;
    }
  };
  // One worker, calls of 0.5 to 1.5 s, a limit of one call: of two calls
  // sent together, one is served and the other refused.
  absl::StatusOr<int64_t> unsent = SendToGuardedBackend(
      Policy{"one-at-a-time", R"({"maxConcurrency": 1})"}, 1, absl::Seconds(1), absl::Seconds(5),
      1, [&](OpenLoopSender& sender) {
        const absl::Time now = absl::Now();
        EXPECT_FALSE(sender.SendAt(now - absl::Seconds(6), prepare, answered));
        EXPECT_TRUE(sender.SendAt(now, prepare, answered));
        EXPECT_TRUE(sender.SendAt(now, prepare, answered));
        EXPECT_EQ(sender.unsent(), 1);
      });
  ASSERT_TRUE(unsent.ok()) << unsent.status();
  EXPECT_EQ(*unsent, 1);
  EXPECT_EQ(prepared.load(), 2);
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(rejected.load(), 1);
  EXPECT_EQ(late.load(), 0);
}

TEST(OpenLoopSenderTest, APolicyThatDoesNotLoadIsNamed) {
  absl::StatusOr<int64_t> unsent =
      SendToGuardedBackend(Policy{"broken", R"({"maxConcurrency": -1})"}, 1, absl::Seconds(1),
                           absl::Seconds(1), 1, [](OpenLoopSender&) { FAIL() << "sent"; });
  ASSERT_FALSE(unsent.ok());
  EXPECT_EQ(unsent.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unsent.status().message().find("policy broken: "), absl::string_view::npos)
      << unsent.status();
}

}  // namespace
}  // namespace overload
