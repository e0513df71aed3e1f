// File: src/server_interceptors/server_drainer.h
//
// A server's graceful shutdown: what the health service hears, the calls
// still open, the drain that refuses new calls while those finish, and the
// refused calls kept until the GOAWAY is out.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_DRAINER_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_DRAINER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/core/mutex.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/health_reporter.h"
#include "src/server_interceptors/proceed_executor.h"

namespace resilience {

// Drain(): the pushback of the calls it refuses, and how long it refuses
// calls at least.
inline constexpr absl::Duration kDrainPushback = absl::Seconds(1);
inline constexpr absl::Duration kMinDrain = absl::Milliseconds(100);
// The end of a drain during which refused calls wait for their answer until
// the GOAWAY is out (ServerDrainer::Drain()).
inline constexpr absl::Duration kParkWindow = absl::Milliseconds(50);
// DrainAndShutdown(): how long connections have to close once no call is
// left (a gRPC client closes its own at once; an idle socket is closed), and
// the head start of the GOAWAY over the refused calls' answers.
inline constexpr absl::Duration kShutdownSettle = absl::Milliseconds(250);
inline constexpr absl::Duration kGoawayHeadStart = absl::Milliseconds(20);

// ServerDrainer
//
// One per ServerResilienceImpl, which the public ServerResilience's drain
// and health methods reach. Each call's DrainStage asks it whether the
// server drains, counts itself open (OpenCall() / CloseCall()) and, refused
// at the drain's end, is parked here (Park()). This class is thread-safe.
class ServerDrainer {
 public:
  // `verdicts`: where Drain() ends the holds; `executor`: where the parked
  // calls are resumed. Both must outlive the drainer (they may be
  // constructed after it: it only keeps their addresses until used).
  // `not_serving_grace`: how long Drain() serves after reporting
  // NOT_SERVING (ServerResilienceOptions::not_serving_grace).
  ServerDrainer(CallVerdicts& verdicts, ProceedExecutor& executor,
                absl::Duration not_serving_grace)
      : verdicts_(verdicts), executor_(executor), not_serving_grace_(not_serving_grace) {}
  ServerDrainer(const ServerDrainer&) = delete;
  ServerDrainer& operator=(const ServerDrainer&) = delete;

  // DrainAndShutdown()
  //
  // A graceful shutdown of `server` (whose interceptors are these), done by
  // `deadline`: Drain(deadline), then server.Shutdown() (GOAWAY), giving
  // connections kShutdownSettle to close when every call was done (at once
  // otherwise), and releasing the calls refused during Drain()'s last
  // kParkWindow only once the GOAWAY is out. Returns when the server is shut
  // down. Use it instead of server.Shutdown().
  void DrainAndShutdown(grpc::Server& server, absl::Time deadline) ABSL_LOCKS_EXCLUDED(park_mu_);

  // Drain()
  //
  // The first step of a graceful shutdown, before grpc::Server::Shutdown():
  // NOT_SERVING first of all; when the health service said SERVING until
  // then, calls that arrive are still served for not_serving_grace (at most
  // half of the time to `deadline`: the calls a client picked this server
  // for before it heard NOT_SERVING). Then draining() and
  // every call that arrives is refused UNAVAILABLE with a
  // pushback of kDrainPushback (DrainStage; behind a GuardedService
  // its handler never runs), and it blocks until every call that arrived
  // before is done (handler returned, status written), or until `deadline`,
  // but for kMinDrain at least (never past `deadline`), so that clients
  // calling at that moment get a refusal to retry rather than the CANCELLED
  // that gRPC 1.51 answers to calls racing a Shutdown(). Holds end at
  // `deadline` (CallVerdicts::EndHoldsAt()). When a server-streaming or
  // bidi call ended during the drain, it returns at `deadline` only: its
  // client may still be reading what it was sent, and once Shutdown()'s
  // GOAWAY is out gRPC 1.51 closes the connection, whose reset discards
  // what the client has not read yet (docs/server-hardening.md,
  // "Shutdown"). Returns whether every call was done. The calls refused in
  // its last kParkWindow get their answer only at ReleaseRefusedCalls(): a
  // client that calls again as soon as it is refused then has no call on
  // its way when the GOAWAY goes out (DrainAndShutdown() does it right).
  bool Drain(absl::Time deadline) ABSL_LOCKS_EXCLUDED(park_mu_);

  // ReleaseRefusedCalls()
  //
  // Answers the calls Drain() keeps, and every later one at once.
  void ReleaseRefusedCalls() ABSL_LOCKS_EXCLUDED(park_mu_);

  bool draining() const { return draining_.load(std::memory_order_acquire); }
  // Calls that arrived before Drain() and are not done yet.
  int64_t open_calls() const { return open_calls_.load(std::memory_order_acquire); }
  // The health service's view of this server: Drain() reports NOT_SERVING
  // first of all; ServerResilience::SetServing() reports SERVING.
  HealthReporter& health() { return health_; }

  // OpenCall() / CloseCall()
  //
  // A DrainStage's call that arrived before the drain is open until
  // CloseCall(); `stream`: it was a server-streaming or bidi call.
  void OpenCall() { open_calls_.fetch_add(1, std::memory_order_acq_rel); }
  void CloseCall(bool stream);

  // Park()
  //
  // Keeps a refused call's `methods` for ReleaseRefusedCalls() (true), or
  // not (false: the caller proceeds).
  bool Park(grpc::experimental::InterceptorBatchMethods* methods) ABSL_LOCKS_EXCLUDED(park_mu_);

 private:
  CallVerdicts& verdicts_;
  ProceedExecutor& executor_;
  const absl::Duration not_serving_grace_;
  HealthReporter health_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> open_calls_{0};
  // A server-streaming or bidi call ended after Drain() began.
  std::atomic<bool> stream_ended_while_draining_{false};
  // Refused calls kept until ReleaseRefusedCalls() (DrainStage::Arrive()).
  Mutex park_mu_;
  bool parking_ ABSL_GUARDED_BY(park_mu_) = false;
  std::vector<grpc::experimental::InterceptorBatchMethods*> parked_ ABSL_GUARDED_BY(park_mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_DRAINER_H_
