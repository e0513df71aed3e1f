// File: examples/cache_service/demo_scenarios.h
//
// cache_demo's scenarios, one function each: a backend that misbehaves in
// one way (flaky, slow, gone, long-tailed, losing capacity) and the policy
// that copes with it, each step checked on the DemoSession.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SCENARIOS_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SCENARIOS_H_

#include "examples/cache_service/demo_session.h"

namespace cache_service {

// Retries through a flaky backend (5% of Gets fail with UNAVAILABLE).
void Flaky(DemoSession& demo);
// Per-attempt timeouts on a slow backend (20% of Gets take 300 ms).
void Slow(DemoSession& demo);
// Store's breaker through an outage and a restart of the backend.
void Outage(DemoSession& demo);
// Stale reads from the client's own copy (Get's fallback) while the backend
// is down (stale_reads_demo.cc).
void StaleReadsInOutage(DemoSession& demo);
// A hedged Get against a long tail (5% of Gets take 80 ms).
void Hedged(DemoSession& demo);
// An adaptive concurrency limit following a backend that loses capacity.
void AdaptiveLimit(DemoSession& demo);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_DEMO_SCENARIOS_H_
