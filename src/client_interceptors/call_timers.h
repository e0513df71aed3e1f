// File: src/client_interceptors/call_timers.h
//
// How a retried call's timer (a retry backoff or the hedging delay) is set
// on its completion queue: at a time on the call's Clock, so that tests can
// drive it on simulated time.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_TIMERS_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_TIMERS_H_

#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/completion_queue.h"

namespace resilience {

// CallTimers
//
// Set() makes `alarm` deliver `tag` on `cq` at `at` (the call Clock's
// WallNow() scale); Cancel() makes it deliver it early (with ok = false, or
// ok = true when it was due anyway). Each Set() delivers its tag exactly
// once, cancelled or not: RetriedUnaryCall counts on it. Real() is gRPC's
// alarm on the real wall clock. Implementations must be thread-safe.
class CallTimers {
 public:
  virtual ~CallTimers() = default;

  virtual void Set(grpc::Alarm* alarm, grpc::CompletionQueue* cq, absl::Time at, void* tag) {
    alarm->Set(cq, absl::ToChronoTime(at), tag);
  }
  virtual void Cancel(grpc::Alarm* alarm) { alarm->Cancel(); }

  static CallTimers& Real() {
    static CallTimers* const timers = new CallTimers();  // never destroyed
    return *timers;
  }
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_TIMERS_H_
