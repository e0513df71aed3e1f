// File: tests/testing/eventually.h
//
// The bounded wait of tests that watch another thread or process.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_EVENTUALLY_H_
#define GRPC_RESILIENCE_TESTS_TESTING_EVENTUALLY_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace resilience::testing {

// Eventually()
//
// Polls `pred` every 2 ms until it holds (true) or `limit` has passed
// (false). Example:
//   ASSERT_TRUE(Eventually([&] { return state->Stats(kGet).in_flight == 0; }));
template <typename Pred>
bool Eventually(Pred pred, absl::Duration limit = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + limit;
  while (!pred()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_EVENTUALLY_H_
