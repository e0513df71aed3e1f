// File: src/engine/limiter_factory.h
//
// Where the client and the server make their limiters and breakers from a
// policy's settings, and decide which of the ones made before an update
// keeps (the same settings keep their state: slots, tokens, windows).

#ifndef GRPC_RESILIENCE_SRC_ENGINE_LIMITER_FACTORY_H_
#define GRPC_RESILIENCE_SRC_ENGINE_LIMITER_FACTORY_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/strings/string_view.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"
#include "src/engine/scope_limiters.h"
#include "src/limits/bulkhead.h"
#include "src/policy/method_policy.h"

namespace resilience {

class FleetLimitBackend;  // src/global_limits/fleet_limit_backend.h (a server's only)

// LimiterFactory
//
// Makes every limiter and breaker of a client or a server, on its clock.
// Immutable once made; thread-safe. A scope's limiters (ForScope() and its
// parts, limiter_factory_scope.cc) are in the library
// grpc_resilience::engine_scopes, which a server links: they make fleet-wide
// limits (src/global_limits), which a client-only program must not link.
// The rest is in grpc_resilience::engine.
//
// Example:
//   LimiterFactory factory(clock, /*seed=*/1, fleet_backend);
//   ScopeLimiters limiters = factory.ForScope("/pkg.S/M", throttle, &previous);
class LimiterFactory {
 public:
  // `seed`: the breakers' randomness. `fleet` (may be null: none) makes the
  // lease sources of fleet-wide limits.
  explicit LimiterFactory(Clock& clock, uint64_t seed = 0,
                          std::shared_ptr<const FleetLimitBackend> fleet = nullptr);

  // ForScope()
  //
  // The limiters of `scope` for `settings`. From `previous` (the scope's so
  // far; may be null) it keeps what stays meaningful: a fixed limit that
  // stays fixed keeps its limiter, resized (the calls in flight hold their
  // slots in it); the same rate its bucket and tokens; the same per-caller
  // settings their keys (a fleet-wide one is made anew). A limit that cannot
  // be built (a fleet-wide one without a backend; a bucket the loader would
  // have refused) leaves the others unmade and says why in `unusable`.
  ScopeLimiters ForScope(absl::string_view scope, const ThrottleSettings& settings,
                         const ScopeLimiters* previous) const;

  // MakeBreaker()
  //
  // The breaker of `settings` telling `listener` of its transitions; null
  // for BreakerKind::kNone.
  std::unique_ptr<Breaker> MakeBreaker(BreakerSettings settings, BreakerListener listener) const;

  // MakeBulkhead()
  //
  // The bulkhead of `options`: `previous` (its slots and queue) when it was
  // made for the same options (`before`; nullopt: none), else a new one.
  std::shared_ptr<Bulkhead> MakeBulkhead(const Bulkhead::Options& options,
                                         const std::optional<Bulkhead::Options>& before,
                                         std::shared_ptr<Bulkhead> previous) const;

 private:
  // ForScope()'s parts: each sets its limiter of `made`, or `made.unusable`.
  void MakeConcurrency(const ThrottleSettings& settings, const ScopeLimiters* previous,
                       ScopeLimiters& made) const;
  void MakeRate(const ThrottleSettings& settings, const ScopeLimiters* previous,
                ScopeLimiters& made) const;
  void MakePerCaller(absl::string_view scope, const PerCallerSettings& settings,
                     const ScopeLimiters* previous, ScopeLimiters& made) const;
  void MakeGlobal(absl::string_view scope, const GlobalThrottleSettings& settings,
                  ScopeLimiters& made) const;

  Clock& clock_;
  const uint64_t seed_;
  const std::shared_ptr<const FleetLimitBackend> fleet_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ENGINE_LIMITER_FACTORY_H_
