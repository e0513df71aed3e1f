// File: src/client_interceptors/call_environment.h
//
// What every call object of one channel's chain shares besides the
// per-method state: its time sources, its timer thread and where breaker
// events go.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_ENVIRONMENT_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_ENVIRONMENT_H_

#include "src/client_interceptors/breaker_event_queue.h"
#include "src/client_interceptors/call_timers.h"
#include "src/client_interceptors/endpoint_router.h"
#include "src/client_interceptors/fallback_registry.h"
#include "src/core/clock.h"
#include "src/core/timeout_scheduler.h"

namespace resilience {

// CallEnvironment
//
// Owned by the ResilientCallFactory; outlives every call of its channel.
struct CallEnvironment {
  // The calls' time: WallNow() for deadlines (gRPC's are wall-clock),
  // Now() for latencies. Clock::Real() unless a test injects another.
  Clock* clock = &Clock::Real();
  // The breakers' clock (ClientResilience::Options::clock): the latency a
  // breaker judges is measured on it, as the breaker's windows are.
  Clock* breaker_clock = &Clock::Real();
  // Where single-attempt calls' timeouts are scheduled.
  TimeoutScheduler* timeouts = nullptr;
  // How retried calls set their backoff and hedging timers.
  CallTimers* timers = &CallTimers::Real();
  // The channel's breaker events, null when nobody listens.
  BreakerEventQueue* events = nullptr;
  // The channel's endpoint picker (policy file: resilience_p2c), null
  // without one: then gRPC's load balancing routes every attempt.
  EndpointRouter* router = nullptr;
  // The fallbacks registered from code for the channel's methods; null:
  // none can be (FallbackStage).
  const FallbackRegistry* fallbacks = nullptr;

  // Delivers queued breaker events once the call holds no lock
  // (BreakerEventQueue::DeliverAfter()).
  void DeliverEvents(bool caller_may_block) const {
    if (events != nullptr) events->DeliverAfter(caller_may_block);
  }
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_ENVIRONMENT_H_
