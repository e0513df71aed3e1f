// File: src/engine/scope_limiters.h
//
// The limiters of one throttle scope (a method, a whole service, or the
// default), as LimiterFactory makes them.

#ifndef GRPC_RESILIENCE_SRC_ENGINE_SCOPE_LIMITERS_H_
#define GRPC_RESILIENCE_SRC_ENGINE_SCOPE_LIMITERS_H_

#include <memory>
#include <string>

#include "src/limits/concurrency_limiter.h"
#include "src/limits/per_caller_limits.h"
#include "src/limits/token_bucket.h"

namespace resilience {

class GlobalRateLimit;  // src/global_limits/global_rate_limit.h (a server's only)

// ScopeLimiters
//
// The limiters a scope's throttle settings call for. Each is shared with
// the scope's next ScopeLimiters when a policy update leaves it meaningful
// (LimiterFactory::ForScope()): calls in flight release what they took into
// the limiter they took it from. The limiters are thread-safe; the struct
// is written once, before any call sees it.
struct ScopeLimiters {
  // Fixed (maxConcurrency) or adaptive (throttle.adaptive); null: no limit.
  std::shared_ptr<ConcurrencyLimiter> concurrency;
  bool adaptive = false;                   // `concurrency` moves on its own
  std::shared_ptr<TokenBucket> rate;       // null: no limit
  std::shared_ptr<GlobalRateLimit> global;  // null: no fleet-wide limit
  // throttle.perCaller: a bucket per caller key; null: none (its keys keep
  // their calls in flight and their tokens across an update that leaves its
  // settings as they were).
  std::shared_ptr<PerCallerLimits> per_caller;
  // The request header holding the caller key; empty: the peer's identity.
  std::string caller_header;
  // Why the limits could not be built (then every call is rejected); empty
  // when they could.
  std::string unusable;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ENGINE_SCOPE_LIMITERS_H_
