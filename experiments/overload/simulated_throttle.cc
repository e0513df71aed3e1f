#include "experiments/overload/simulated_throttle.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"

namespace overload {

absl::StatusOr<SimulatedThrottle> SimulatedThrottle::Create(const Policy& policy,
                                                            resilience::Clock& clock) {
  absl::StatusOr<resilience::PolicyTable> set =
      resilience::PolicyTable::FromJsonString(PolicyFileJson(policy));
  if (!set.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.name, ": ", set.status().message()));
  }
  const resilience::MethodPolicy* p = set->Find("/x.Y/Z").policy;
  if (p == nullptr || !p->throttle) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", policy.name, ": no throttle"));
  }
  SimulatedThrottle t;
  t.limiter = resilience::CreateConcurrencyLimiter(*p->throttle, clock);
  t.shares = p->throttle->criticality_shares;
  if (p->throttle->per_caller) {
    absl::StatusOr<std::unique_ptr<resilience::PerCallerLimits>> per_caller =
        resilience::PerCallerLimits::Create(p->throttle->per_caller->limits, clock);
    if (!per_caller.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", policy.name, ": ", per_caller.status().message()));
    }
    t.per_caller = *std::move(per_caller);
  }
  return t;
}

}  // namespace overload
