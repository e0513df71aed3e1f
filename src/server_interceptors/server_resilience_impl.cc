#include "src/server_interceptors/server_resilience_impl.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "src/policy/method_catalog.h"

namespace resilience {

// The public ServerMethodStats names each counter itself (StatsOf() copies
// them by name, so a counter without its field does not compile), and has
// no field of its own before calls_by_code (so a field without a counter
// fails here).
#define GRPC_RESILIENCE_COUNT_ONE(name) +1
static_assert(offsetof(ServerMethodStats, calls_by_code) ==
                  sizeof(int64_t) * (0 GRPC_RESILIENCE_SERVER_COUNTERS(GRPC_RESILIENCE_COUNT_ONE)),
              "ServerMethodStats and GRPC_RESILIENCE_SERVER_COUNTERS list different counters");
#undef GRPC_RESILIENCE_COUNT_ONE


ServerResilienceImpl::ServerResilienceImpl(PolicySet policies, Clock& clock,
                                           std::shared_ptr<ResilienceEvents> events, bool metrics,
                                           std::shared_ptr<const FleetLimitBackend> fleet_limits,
                                           absl::Duration not_serving_grace)
    : clock_(clock),
      fleet_limits_(std::move(fleet_limits)),
      listener_(std::move(events)),
      events_(listener_ == nullptr ? nullptr : std::make_unique<SerialExecutor>()),
      metrics_(metrics),
      methods_(std::make_shared<Generation>(Generation{std::move(policies)}),
               [this](const char* method, const Generation& generation,
                      const ServerMethodState* previous) {
                 return Resolve(method, generation, previous);
               }),
      drainer_(call_verdicts_, executor_, not_serving_grace) {
  unknown_->method = std::string(kUnknownMethod);
  unknown_->metrics = metrics_;
  unknown_->clock = &clock_;
  SetAnyPolicies(methods_.Current()->policies);
}

namespace {

// The rejection messages of `method` under `limits`, judged by `shares`
// (`retried`: a retried attempt's, under throttle.retryShedding).
RejectionMessages MessagesFor(const std::string& method, const ScopeLimits& limits,
                              const CriticalityShares& shares, bool retried) {
  return RejectionMessages(
      method, shares,
      limits.rate != nullptr ? std::optional<double>(limits.rate->rate_per_second())
                             : std::nullopt,
      limits.global != nullptr
          ? std::optional<double>(limits.global->limiter().options().rate_per_second)
          : std::nullopt,
      limits.concurrency != nullptr && !limits.adaptive
          ? std::optional<int64_t>(limits.concurrency->limit())
          : std::nullopt,
      limits.unusable, retried);
}

}  // namespace

std::shared_ptr<ServerMethodState> ServerResilienceImpl::ForMethod(const char* method) {
  std::shared_ptr<ServerMethodState> state = methods_.Find(method);
  // Names no one vouches for (and any past MethodCache's bound) are counted
  // together.
  if (state == nullptr && metrics_) return unknown_;
  return state;
}

MethodCache<ServerMethodState>::Resolution ServerResilienceImpl::Resolve(
    const char* method, const Generation& generation, const ServerMethodState* previous) {
  const PolicyTable::Match match = PolicySetAccess::Table(generation.policies).Find(method);
  // A method the file names exactly, or one linked into the process, is
  // known to the program; other names come from clients and are bounded.
  const bool named = (!match.scope.empty() && match.scope.back() != '/') ||
                     MethodCatalog::Linked().Find(method) != nullptr;
  auto state = previous != nullptr ? std::make_shared<ServerMethodState>(previous->tally)
                                   : std::make_shared<ServerMethodState>();
  state->method = method;
  state->policies = generation.policies;
  state->clock = &clock_;
  if (match.policy == nullptr || (!match.policy->throttle && !match.policy->fault_injection)) {
    // Counted only, on its own when the name is known to the program; the
    // others under kUnknownMethod (ForMethod()). A method that had a state
    // keeps one: its counters stay visible.
    if ((!metrics_ || !named) && previous == nullptr) return {nullptr, named};
    state->metrics = metrics_;
    return {std::move(state), named};
  }
  state->form = match.policy->canonical.server;
  state->metrics = metrics_;
  state->events = events_.get();
  state->listener = listener_.get();
  if (match.policy->fault_injection) {
    state->fault = &*match.policy->fault_injection;
    const bool same_fault = previous != nullptr && previous->fault != nullptr &&
                            previous->fault_random != nullptr &&
                            PolicySetAccess::Table(previous->policies)
                                    .Find(method)
                                    .policy->canonical.fault == match.policy->canonical.fault;
    state->fault_random = same_fault ? previous->fault_random
                                     : std::make_shared<SplitMixRandom>(state->fault->seed);
  }
  state->guarded = guards_.Guards(state->method);
  MutexLock lock(&mu_);
  state->criticality = match.policy->criticality;
  if (match.policy->throttle) {
    state->limits_owner =
        LimitsFor(match.scope, *match.policy->throttle, match.policy->canonical.throttle);
    state->limits = state->limits_owner.get();
    const std::optional<DeadlineAdmission::Options>& deadline =
        match.policy->throttle->deadline_admission;
    if (deadline.has_value()) {
      // Its service times and window survive an update that keeps them.
      const bool same = previous != nullptr && previous->deadline_admission != nullptr &&
                        previous->deadline_admission->options() == *deadline;
      state->deadline_admission =
          same ? previous->deadline_admission : std::make_shared<DeadlineAdmission>(*deadline);
    }
    const ScopeLimits& limits = *state->limits;
    state->rejections = MessagesFor(state->method, limits, limits.shares, false);
    if (limits.retry_shedding.sheds_retries()) {
      state->retry_rejections =
          MessagesFor(state->method, limits, limits.retry_shedding.retry_shares(), true);
    }
  }
  return {std::move(state), named};
}

ServerMethodStats ServerResilienceImpl::StatsOf(const ServerMethodState& from) {
  ServerMethodStats to;
  GRPC_RESILIENCE_SERVER_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
  to.calls_by_code = from.meter.StatusCounts();
  to.latency = from.meter.Latencies();
  if (from.limits != nullptr && from.limits->concurrency != nullptr) {
    to.concurrency_limit = from.limits->concurrency->limit();
  }
  for (int i = 0; i < kCriticalityLevels; ++i) {
    to.rejected_by_criticality[i] = from.rejected_by_criticality[i].load(std::memory_order_relaxed);
  }
  return to;
}

ServerMethodStats ServerResilienceImpl::Stats(absl::string_view method) {
  std::shared_ptr<const ServerMethodState> state = methods_.Get(method);
  if (state == nullptr && method == kUnknownMethod) state = unknown_;
  if (state == nullptr) return ServerMethodStats{};
  return StatsOf(*state);
}

std::vector<std::shared_ptr<const ServerMethodState>> ServerResilienceImpl::SortedStates() {
  std::vector<std::shared_ptr<ServerMethodState>> made = methods_.States();
  std::vector<std::shared_ptr<const ServerMethodState>> states(made.begin(), made.end());
  if (unknown_->meter.StatusCounts().total() > 0 ||
      unknown_->in_flight.load(std::memory_order_relaxed) != 0) {
    states.push_back(unknown_);
  }
  std::sort(states.begin(), states.end(),
            [](const std::shared_ptr<const ServerMethodState>& a,
               const std::shared_ptr<const ServerMethodState>& b) { return a->method < b->method; });
  return states;
}

std::vector<std::pair<std::string, ServerMethodStats>> ServerResilienceImpl::AllStats() {
  std::vector<std::pair<std::string, ServerMethodStats>> all;
  for (const auto& s : SortedStates()) all.emplace_back(s->method, StatsOf(*s));
  return all;
}

}  // namespace resilience
