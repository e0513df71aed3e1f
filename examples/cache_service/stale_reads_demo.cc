// cache_demo's stale reads: the backend goes away and Gets of the keys the
// client has seen are answered from its own small copy (StaleReads, the
// fallback of Get), while those of keys it never saw fail.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "examples/cache_service/demo_scenarios.h"
#include "examples/cache_service/stale_reads.h"

namespace cache_service {

void StaleReadsInOutage(DemoSession& demo) {
  std::printf(
      "\n-- stale reads: the client keeps a copy of the last 1024 values it stored or read;\n"
      "   when the backend goes away, Get's fallback answers from it (a miss still fails)\n");
  auto server = StartServer(NoFaults);
  if (server == nullptr) return demo.Step("start the server", "failed", false);
  std::shared_ptr<resilience::ClientResilience> stats;
  std::unique_ptr<cache::v1::CacheService::Stub> stub =
      cache::v1::CacheService::NewStub(ResilientChannel(server->address(), &stats));
  StaleReads copy;
  const absl::Status installed = copy.Install(*stats);
  constexpr int kSeen = 20;
  constexpr int kRounds = 10;
  int stored = 0;
  for (int i = 0; i < kSeen; ++i) {
    stored += StoreRemembering(*stub, copy, absl::StrFormat("seen-%02d", i),
                               absl::StrFormat("value-%02d", i), kCallTimeout)
                      .ok()
                  ? 1
                  : 0;
  }
  server->Shutdown(absl::ZeroDuration());
  server.reset();  // down
  // Every seen key kRounds times, and one key never seen per round.
  int stale_right = 0, stale_wrong = 0, unseen_failed = 0, other = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kSeen; ++i) {
      std::string value;
      bool stale = false;
      grpc::Status s = GetRemembering(*stub, copy, absl::StrFormat("seen-%02d", i), &value,
                                      &stale, kCallTimeout);
      if (s.ok() && stale && value == absl::StrFormat("value-%02d", i)) {
        ++stale_right;
      } else if (s.ok()) {
        ++stale_wrong;
      } else {
        ++other;
      }
    }
    std::string value;
    bool stale = false;
    grpc::Status s = GetRemembering(*stub, copy, absl::StrFormat("never-%02d", round), &value,
                                    &stale, kCallTimeout);
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !stale) ++unseen_failed;
  }
  const resilience::ClientMethodStats get = stats->Stats("/cache.v1.CacheService/Get");
  const int gets = kRounds * (kSeen + 1);
  demo.Step(absl::StrFormat("%d Gets while the backend is down (%d of seen keys)", gets,
                            kRounds * kSeen),
            absl::StrFormat("%d answered stale, %d misses failed", stale_right, unseen_failed),
            installed.ok() && stored == kSeen && stale_right == kRounds * kSeen &&
                stale_wrong == 0 && other == 0 && unseen_failed == kRounds);
  std::printf(
      "      Gets answered stale: %d of %d (by cause: breaker %ld, retry budget %ld, failed "
      "after retries %ld)\n",
      stale_right, gets, static_cast<long>(get.fallbacks_breaker),
      static_cast<long>(get.fallbacks_retry_budget), static_cast<long>(get.fallbacks_failed));
  // Each Get counts as the failure it met (UNAVAILABLE), none as OK.
  const int counted_ok = static_cast<int>(get.CallsWithCode(0));
  demo.Step("the failures stay visible in the client's counters",
            absl::StrFormat("Gets counted OK %d of %d, fallbacks %ld, breaker rejections %ld",
                            counted_ok, gets, static_cast<long>(get.Fallbacks()),
                            static_cast<long>(get.rejected_by_breaker)),
            counted_ok == 0 && get.Fallbacks() == stale_right && get.fallbacks_breaker > 0);
}

}  // namespace cache_service
