// File: experiments/overload/open_loop_sender.h
//
// The load generator of the overload experiment's real-gRPC scenarios: calls
// sent at the times a schedule gives (an open loop: a call waits for its
// time, never for the answers of others), each with a deadline, through the
// async API, and how each ended reported back.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OPEN_LOOP_SENDER_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OPEN_LOOP_SENDER_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "experiments/overload/overload.h"
#include "grpcpp/client_context.h"

namespace overload {

// OpenLoopSender
//
// Sends Gets on `stub`, each with `deadline`. An arrival the sender reaches
// more than a deadline after its time means this process or the machine
// stalled: sent then, it and every other overdue arrival would leave at
// once, a burst the schedule never asked for whose calls expire before the
// server sees them. Such an arrival is not sent but counted (unsent()), so
// that a run can say the load generator fell behind rather than blame the
// server. SendAt() is called from one thread; the answers come on gRPC's.
// The destructor waits for every call sent to end (each ends by its
// deadline), so the stub must outlive the sender.
class OpenLoopSender {
 public:
  // How a call that was sent ended, as its client saw it.
  enum class Answer {
    kOkInDeadline,  // OK, within its deadline
    kRejected,      // RESOURCE_EXHAUSTED: refused by the server's throttle
    kLate,          // anything else: past its deadline, or failed
  };

  OpenLoopSender(cache::v1::CacheService::Stub& stub, absl::Duration deadline);
  ~OpenLoopSender();

  OpenLoopSender(const OpenLoopSender&) = delete;
  OpenLoopSender& operator=(const OpenLoopSender&) = delete;

  // WarmUp()
  //
  // One call on `stub`, waited for (10 s at most), so that no measured call
  // waits for the connection.
  static void WarmUp(cache::v1::CacheService::Stub& stub);

  // SendAt()
  //
  // Sleeps until `at`; then, unless that is more than a deadline ago (not
  // sent, counted, false), sends one Get after `prepare` has set its context
  // (headers, criticality) and returns true. `answered` runs once, on a gRPC
  // thread, with how the call ended.
  bool SendAt(absl::Time at, absl::FunctionRef<void(grpc::ClientContext&)> prepare,
              std::function<void(Answer)> answered);

  // The same with the call's own `deadline` (at most the sender's, which
  // bounds how late an arrival is still sent), `ended` given the call's
  // status and its latency (send to answer) as its client saw them.
  bool SendAt(absl::Time at, absl::Duration deadline,
              absl::FunctionRef<void(grpc::ClientContext&)> prepare,
              std::function<void(const grpc::Status&, absl::Duration)> ended);

  // Drain()
  //
  // Waits until every call sent has ended, at most a deadline and 5 s more;
  // false when some had not.
  bool Drain();

  // The arrivals SendAt() did not send because they were reached too late.
  int64_t unsent() const { return unsent_.load(std::memory_order_relaxed); }

 private:
  struct Call;

  cache::v1::CacheService::Stub& stub_;
  const absl::Duration deadline_;
  // Calls sent and not yet ended; the answers' threads decrement it.
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int64_t> unsent_{0};
};

// SendToGuardedBackend()
//
// One real-gRPC run: `policy`'s throttle in a real server (ServeGuarded:
// the server interceptors, the service behind the guard) in front of a
// BoundedCapacityService of `workers` x `service_time` (seeded), its
// channel warmed up; `send` sends through an OpenLoopSender with
// `deadline`. When `send` returns, the calls still in flight are waited
// for and the server is shut down. Returns the arrivals not sent
// (OpenLoopSender::unsent()); InvalidArgument naming the policy if it does
// not load, or the server's error if it cannot start.
absl::StatusOr<int64_t> SendToGuardedBackend(const Policy& policy, int workers,
                                             absl::Duration service_time,
                                             absl::Duration deadline, uint64_t seed,
                                             absl::FunctionRef<void(OpenLoopSender&)> send);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OPEN_LOOP_SENDER_H_
