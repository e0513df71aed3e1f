#include "src/server_interceptors/server_drainer.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/time/clock.h"
#include "src/core/clock.h"

namespace resilience {
namespace {

// Drain() and DrainAndShutdown() wait for real calls and real connections,
// against a wall-clock deadline that gRPC's Shutdown() shares: the real
// wall clock, whatever clock the throttles are given.
absl::Time RealWallNow() { return Clock::Real().WallNow(); }

}  // namespace

bool ServerDrainer::Drain(absl::Time deadline) {
  // First, so that clients that check health stop picking this server
  // while it still answers the calls on their way.
  const bool was_serving = health_.NotServing();
  verdicts_.EndHoldsAt(deadline);
  // A client may have picked this server before its Watch stream heard
  // NOT_SERVING: its call is still served, as behind a readiness probe and
  // a preStop delay (rolling restarts with no failed call, docs/replicas.md).
  // Those calls count as open: the wait below includes them.
  if (was_serving) {
    const absl::Duration serve = std::min(not_serving_grace_, (deadline - RealWallNow()) / 2);
    if (serve > absl::ZeroDuration()) absl::SleepFor(serve);
  }
  const absl::Time start = RealWallNow();
  draining_.store(true, std::memory_order_release);
  const absl::Time refuse_until = std::min(deadline, start + kMinDrain);
  // Polled: a shutdown is rare, and the loop ends by `deadline`.
  bool done = false;
  for (absl::Time now = start;; now = RealWallNow()) {
    done = open_calls() == 0;
    if (now >= deadline) break;
    if (done) {
      // After a stream, until the deadline, its last kParkWindow parked.
      const absl::Time until = stream_ended_while_draining_.load(std::memory_order_acquire)
                                   ? deadline - kParkWindow
                                   : refuse_until;
      if (now >= until) break;
    }
    absl::SleepFor(std::min(absl::Milliseconds(5), deadline - now));
  }
  // The last kParkWindow: refused calls wait for their answer.
  const absl::Time now = RealWallNow();
  const absl::Duration park = std::min(kParkWindow, deadline - now);
  if (park > absl::ZeroDuration()) {
    {
      MutexLock lock(&park_mu_);
      parking_ = true;
    }
    absl::SleepFor(park);
  }
  return done;
}

void ServerDrainer::CloseCall(bool stream) {
  if (stream && draining()) stream_ended_while_draining_.store(true, std::memory_order_release);
  open_calls_.fetch_sub(1, std::memory_order_acq_rel);
}

bool ServerDrainer::Park(grpc::experimental::InterceptorBatchMethods* methods) {
  MutexLock lock(&park_mu_);
  if (!parking_) return false;
  parked_.push_back(methods);
  return true;
}

void ServerDrainer::ReleaseRefusedCalls() {
  std::vector<grpc::experimental::InterceptorBatchMethods*> parked;
  {
    MutexLock lock(&park_mu_);
    parking_ = false;
    parked.swap(parked_);
  }
  // Proceed() runs a sync handler on the calling thread: the executor's.
  for (grpc::experimental::InterceptorBatchMethods* methods : parked) {
    executor_.Run([methods] { methods->Proceed(); });
  }
}

void ServerDrainer::DrainAndShutdown(grpc::Server& server, absl::Time deadline) {
  const bool all_done = Drain(deadline);
  // Calls still running are cancelled at once by Shutdown(): the kept ones
  // are answered before, not cancelled with them.
  if (!all_done) ReleaseRefusedCalls();
  // Shutdown() blocks until the calls are done, the kept ones included: they
  // are answered from here once the GOAWAY has had its head start.
  std::thread release([this] {
    absl::SleepFor(kGoawayHeadStart);
    ReleaseRefusedCalls();
  });
  const absl::Time now = RealWallNow();
  server.Shutdown(absl::ToChronoTime(all_done ? now + kShutdownSettle : now));
  release.join();
}

}  // namespace resilience
