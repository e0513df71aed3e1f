// File: include/grpc_resilience/events.h
//
// What the library tells the application as it happens: breaker
// transitions and throttle rejections (ResilienceEvents), and LogEvents,
// which prints them.

#ifndef GRPC_RESILIENCE_EVENTS_H_
#define GRPC_RESILIENCE_EVENTS_H_

#include "src/grpc_common/log_events.h"
#include "src/grpc_common/resilience_events.h"

#endif  // GRPC_RESILIENCE_EVENTS_H_
