/// \file include/grpc_resilience/events.h
///
/// What the library tells the application as it happens: breaker
/// transitions and throttle rejections (ResilienceEvents, with the breaker
/// vocabulary they carry, breaker_state.h), LogEvents, which prints them, and
/// RecentEvents, which keeps the last ones for the status page.

#ifndef GRPC_RESILIENCE_EVENTS_H_
#define GRPC_RESILIENCE_EVENTS_H_

#include "grpc_resilience/breaker_state.h"
#include "grpc_resilience/log_events.h"
#include "grpc_resilience/recent_events.h"
#include "grpc_resilience/resilience_events.h"

#endif  // GRPC_RESILIENCE_EVENTS_H_
