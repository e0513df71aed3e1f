#include "src/core/serial_executor.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

// Jobs posted from several threads run one at a time, each thread's in its
// order, all on one thread that is none of the posters.
TEST(SerialExecutorTest, RunsJobsOneAtATimeInPostOrderOnItsOwnThread) {
  SerialExecutor executor;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  // Touched only by jobs: a second job running at once would be a race
  // (TSan) and could break the order checks below.
  std::vector<int> last_seen(kThreads, -1);
  int out_of_order = 0;
  std::set<std::thread::id> runners;
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        executor.Post([&, t, i] {
          if (last_seen[t] != i - 1) ++out_of_order;
          last_seen[t] = i;
          runners.insert(std::this_thread::get_id());
        });
      }
    });
  }
  std::set<std::thread::id> poster_ids;
  for (std::thread& t : posters) {
    poster_ids.insert(t.get_id());
    t.join();
  }
  ASSERT_TRUE(executor.Flush());
  EXPECT_EQ(executor.pending(), 0u);
  EXPECT_EQ(out_of_order, 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(last_seen[t], kPerThread - 1) << t;
  ASSERT_EQ(runners.size(), 1u);
  EXPECT_EQ(poster_ids.count(*runners.begin()), 0u);
  EXPECT_NE(*runners.begin(), std::this_thread::get_id());
}

// Once Flush() returns, every job posted before it has finished.
TEST(SerialExecutorTest, FlushReturnsAfterEveryEarlierJob) {
  SerialExecutor executor;
  int ran = 0;  // written by jobs, read after Flush()
  for (int round = 1; round <= 20; ++round) {
    for (int i = 0; i < 50; ++i) executor.Post([&] { ++ran; });
    ASSERT_TRUE(executor.Flush());
    EXPECT_EQ(ran, round * 50);
  }
  // Nothing posted: returns at once.
  EXPECT_TRUE(executor.Flush());
}

// A job that blocks holds up the jobs after it, never Post() nor pending().
TEST(SerialExecutorTest, BlockedJobDelaysLaterJobsButNotThePoster) {
  SerialExecutor executor;
  absl::Notification started;
  absl::Notification release;
  std::atomic<bool> second_ran{false};
  executor.Post([&] {
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();
  executor.Post([&] { second_ran = true; });  // returns although the first job blocks
  EXPECT_EQ(executor.pending(), 2u);            // the running job counts
  EXPECT_FALSE(second_ran.load());
  release.Notify();
  ASSERT_TRUE(executor.Flush());
  EXPECT_TRUE(second_ran.load());
  EXPECT_EQ(executor.pending(), 0u);
}

// A Flush() waiting on another thread returns only after the job that was
// running when it was called finished.
TEST(SerialExecutorTest, FlushOnAnotherThreadWaitsForTheRunningJob) {
  SerialExecutor executor;
  absl::Notification started;
  absl::Notification release;
  std::atomic<bool> job_done{false};
  executor.Post([&] {
    started.Notify();
    release.WaitForNotification();
    job_done = true;
  });
  started.WaitForNotification();
  std::atomic<bool> done_when_flushed{false};
  std::thread flusher([&] {
    EXPECT_TRUE(executor.Flush());
    done_when_flushed = job_done.load();
  });
  release.Notify();
  flusher.join();
  EXPECT_TRUE(done_when_flushed.load());
}

// A job (an event listener) that calls Flush() would wait for itself and
// the jobs behind it: it gets false at once, and those jobs still run, in
// order, after it.
TEST(SerialExecutorTest, FlushFromAJobReturnsFalseInsteadOfDeadlocking) {
  SerialExecutor executor;
  absl::Notification queued;
  std::vector<int> order;  // touched only by jobs
  bool flushed_inside = true;
  executor.Post([&] {
    queued.WaitForNotification();  // the second job is queued behind this one
    flushed_inside = executor.Flush();
    order.push_back(1);
  });
  executor.Post([&] { order.push_back(2); });
  queued.Notify();
  ASSERT_TRUE(executor.Flush());
  EXPECT_FALSE(flushed_inside);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// Jobs may post more jobs and read pending() (no lock is held while a job
// runs); what they post runs after them.
TEST(SerialExecutorTest, JobsMayPostAndReadPending) {
  SerialExecutor executor;
  std::vector<int> order;  // touched only by jobs
  size_t pending_inside = 0;
  // The first job waits until the second is posted: otherwise it could post
  // its own job ahead of it.
  absl::Notification second_posted;
  executor.Post([&] {
    second_posted.WaitForNotification();
    order.push_back(1);
    executor.Post([&] { order.push_back(3); });
    pending_inside = executor.pending();
  });
  executor.Post([&] { order.push_back(2); });
  second_posted.Notify();
  // The first Flush() may return before the job posted by the first job
  // ran (it was posted after the Flush()); the second one cannot.
  ASSERT_TRUE(executor.Flush());
  ASSERT_TRUE(executor.Flush());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(pending_inside, 2u);  // itself and the one it posted
}

// The destructor runs everything queued, including jobs posted by jobs
// while it waits, then joins: nothing is dropped.
TEST(SerialExecutorTest, DestructorRunsEveryQueuedJob) {
  std::atomic<int> ran{0};
  std::atomic<bool> posted_by_job_ran{false};
  absl::Notification release;
  std::thread releaser;
  {
    SerialExecutor executor;
    executor.Post([&] {
      release.WaitForNotification();
      executor.Post([&] { posted_by_job_ran = true; });
      ++ran;
    });
    for (int i = 0; i < 99; ++i) executor.Post([&] { ++ran; });
    releaser = std::thread([&] { release.Notify(); });
  }  // waits for all of them
  releaser.join();
  EXPECT_EQ(ran.load(), 100);
  EXPECT_TRUE(posted_by_job_ran.load());
}

// An executor nothing was posted to has no thread to stop.
TEST(SerialExecutorTest, UnusedExecutorIsDestroyedAtOnce) {
  SerialExecutor executor;
  EXPECT_EQ(executor.pending(), 0u);
  EXPECT_TRUE(executor.Flush());
}

}  // namespace
}  // namespace resilience
