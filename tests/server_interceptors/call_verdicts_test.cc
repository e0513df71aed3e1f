// CallVerdicts: the hand-over of verdicts from interceptors to the guard.

#include "src/server_interceptors/call_verdicts.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(CallVerdictsTest, TakeReturnsEachVerdictOnce) {
  CallVerdicts verdicts;
  int a = 0, b = 0;
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kRun);  // empty: the fast path
  verdicts.Reject(&a);
  verdicts.Reject(&a);  // idempotent
  EXPECT_EQ(verdicts.size(), 1);
  EXPECT_TRUE(verdicts.IsRejected(&a));
  EXPECT_FALSE(verdicts.IsRejected(&b));
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kRun);
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kReject);
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kRun);
  verdicts.Reject(&b);
  verdicts.Forget(&b);
  verdicts.Forget(&b);
  EXPECT_EQ(verdicts.size(), 0);
}

// A rejection on arrival is named by the core call (all the guard's
// Deserialize() knows of a call), carries its answer, and is an answer only
// for that name: a context's plain rejection is not one.
TEST(CallVerdictsTest, RejectionOnArrivalIsKeptUnderTheCoreCallWithItsAnswer) {
  CallVerdicts verdicts;
  int core_call = 0, context = 0, other = 0;
  EXPECT_FALSE(verdicts.AnsweredOnArrival(&core_call));  // empty: the fast path
  EXPECT_FALSE(verdicts.AnsweredOnArrival(nullptr));
  verdicts.RejectOnArrival(&core_call, 8, "m: concurrency limit 1 reached", "250", "report");
  verdicts.Reject(&context);
  EXPECT_TRUE(verdicts.AnsweredOnArrival(&core_call));
  EXPECT_TRUE(verdicts.AnsweredOnArrival(&core_call));  // asked, not taken
  EXPECT_FALSE(verdicts.AnsweredOnArrival(&context));
  EXPECT_FALSE(verdicts.AnsweredOnArrival(&other));
  Verdict answer = verdicts.Take(&core_call);
  EXPECT_EQ(answer.kind, Verdict::kReject);
  EXPECT_TRUE(answer.answer);
  EXPECT_EQ(answer.code, 8);
  EXPECT_EQ(answer.message, "m: concurrency limit 1 reached");
  EXPECT_EQ(answer.pushback_ms, "250");
  EXPECT_EQ(answer.load_report, "report");
  EXPECT_FALSE(verdicts.AnsweredOnArrival(&core_call));
  verdicts.Forget(&context);
  EXPECT_EQ(verdicts.size(), 0);
}

TEST(CallVerdictsTest, HoldCarriesItsTimeAndARejectionWins) {
  CallVerdicts verdicts;
  std::atomic<int64_t> ended{0};
  int a = 0, b = 0;
  const absl::Time until = absl::FromUnixSeconds(100);
  verdicts.Hold(&a, until, &ended);
  EXPECT_FALSE(verdicts.IsRejected(&a));
  Verdict held = verdicts.Take(&a);
  EXPECT_EQ(held.kind, Verdict::kHold);
  EXPECT_EQ(held.hold_until, until);
  EXPECT_EQ(held.ended_while_held, &ended);
  verdicts.Reject(&b);
  verdicts.Hold(&b, until, &ended);
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kReject);
  verdicts.Hold(&b, until, &ended);
  verdicts.Reject(&b);
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kReject);
  EXPECT_EQ(verdicts.size(), 0);
}

// The one decision of when a hold ends, at chosen times: a passed deadline
// first, then the hold's end, then EndHoldsAt(), then a cancellation.
TEST(CallVerdictsTest, EndOfHold) {
  CallVerdicts verdicts;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const absl::Time until = t0 + absl::Milliseconds(100);
  const absl::Time deadline = t0 + absl::Milliseconds(200);
  EXPECT_EQ(verdicts.EndOfHold(t0, until, deadline), HoldEnd::kHeld);
  EXPECT_EQ(verdicts.EndOfHold(t0, until, absl::InfiniteFuture()), HoldEnd::kHeld);
  EXPECT_EQ(verdicts.EndOfHold(t0, until, deadline, /*cancelled=*/true), HoldEnd::kCancelled);
  EXPECT_EQ(verdicts.EndOfHold(until, until, deadline), HoldEnd::kElapsed);
  EXPECT_EQ(verdicts.EndOfHold(until, until, deadline, /*cancelled=*/true), HoldEnd::kElapsed);
  // The deadline within the hold, and after its end but passed too.
  EXPECT_EQ(verdicts.EndOfHold(t0 + absl::Milliseconds(50), until, t0 + absl::Milliseconds(50)),
            HoldEnd::kDeadlinePassed);
  EXPECT_EQ(verdicts.EndOfHold(deadline, until, deadline), HoldEnd::kDeadlinePassed);

  verdicts.EndHoldsAt(t0 + absl::Milliseconds(10));
  EXPECT_EQ(verdicts.EndOfHold(t0, until, deadline), HoldEnd::kHeld);
  EXPECT_EQ(verdicts.EndOfHold(t0 + absl::Milliseconds(10), until, deadline, /*cancelled=*/true),
            HoldEnd::kHoldsEnded);
  EXPECT_EQ(verdicts.EndOfHold(until, until, deadline), HoldEnd::kElapsed);
  EXPECT_EQ(verdicts.EndOfHold(deadline, until, deadline), HoldEnd::kDeadlinePassed);
}

// Many threads, each deciding and taking its own calls while others do the
// same: every verdict is taken exactly once and nothing is left behind.
TEST(CallVerdictsTest, ConcurrentCallsAreTakenExactlyOnce) {
  CallVerdicts verdicts;
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::vector<std::unique_ptr<int[]>> calls;
  for (int t = 0; t < kThreads; ++t) calls.push_back(std::make_unique<int[]>(kCalls));
  std::vector<int> taken(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        int* call = &calls[t][i];
        if (i % 2 == 0) verdicts.Reject(call);
        if (verdicts.Take(call).kind == Verdict::kReject) ++taken[t];
        verdicts.Forget(call);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(taken[t], kCalls / 2);
  EXPECT_EQ(verdicts.size(), 0);
}

}  // namespace
}  // namespace resilience
