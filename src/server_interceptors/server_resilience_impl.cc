#include "src/server_interceptors/server_resilience_impl.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"

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
      not_serving_grace_(not_serving_grace) {
  unknown_->method = std::string(kUnknownMethod);
  unknown_->metrics = metrics_;
  unknown_->clock = &clock_;
  SetAnyPolicies(policies);
  auto first = std::make_shared<Generation>();
  first->policies = std::move(policies);
  MutexLock lock(&generation_mu_);
  generation_ = std::move(first);
}

namespace {

// Drain() and DrainAndShutdown() wait for real calls and real connections,
// against a wall-clock deadline that gRPC's Shutdown() shares: the real
// wall clock, whatever clock the throttles are given.
absl::Time RealWallNow() { return Clock::Real().WallNow(); }

}  // namespace

bool ServerResilienceImpl::Drain(absl::Time deadline) {
  // First, so that clients that check health stop picking this server
  // while it still answers the calls on their way.
  const bool was_serving = health_.NotServing();
  EndHoldsAt(deadline);
  // A client may have picked this server before its Watch stream heard
  // NOT_SERVING: its call is still served, as behind a readiness probe and
  // a preStop delay (rolling restarts with no failed call, docs/replicas.md).
  // Those calls count as open: the wait below includes them.
  if (was_serving) {
    const absl::Duration serve = std::min(not_serving_grace_, (deadline - RealWallNow()) / 2);
    if (serve > absl::ZeroDuration()) absl::SleepFor(serve);
  }
  const absl::Time start = RealWallNow();
  draining_.store(true, std::memory_order_release);
  const absl::Time refuse_until = std::min(deadline, start + kMinDrain);
  // Polled: a shutdown is rare, and the loop ends by `deadline`.
  bool done = false;
  for (absl::Time now = start;; now = RealWallNow()) {
    done = open_calls() == 0;
    if (now >= deadline) break;
    if (done) {
      // After a stream, until the deadline, its last kParkWindow parked.
      const absl::Time until = stream_ended_while_draining_.load(std::memory_order_acquire)
                                   ? deadline - kParkWindow
                                   : refuse_until;
      if (now >= until) break;
    }
    absl::SleepFor(std::min(absl::Milliseconds(5), deadline - now));
  }
  // The last kParkWindow: refused calls wait for their answer.
  const absl::Time now = RealWallNow();
  const absl::Duration park = std::min(kParkWindow, deadline - now);
  if (park > absl::ZeroDuration()) {
    {
      MutexLock lock(&park_mu_);
      parking_ = true;
    }
    absl::SleepFor(park);
  }
  return done;
}

bool ServerResilienceImpl::Park(grpc::experimental::InterceptorBatchMethods* methods) {
  MutexLock lock(&park_mu_);
  if (!parking_) return false;
  parked_.push_back(methods);
  return true;
}

void ServerResilienceImpl::ReleaseRefusedCalls() {
  std::vector<grpc::experimental::InterceptorBatchMethods*> parked;
  {
    MutexLock lock(&park_mu_);
    parking_ = false;
    parked.swap(parked_);
  }
  // Proceed() runs a sync handler on the calling thread: the executor's.
  for (grpc::experimental::InterceptorBatchMethods* methods : parked) {
    executor_.Run([methods] { methods->Proceed(); });
  }
}

void ServerResilienceImpl::DrainAndShutdown(grpc::Server& server, absl::Time deadline) {
  const bool all_done = Drain(deadline);
  // Calls still running are cancelled at once by Shutdown(): the kept ones
  // are answered before, not cancelled with them.
  if (!all_done) ReleaseRefusedCalls();
  // Shutdown() blocks until the calls are done, the kept ones included: they
  // are answered from here once the GOAWAY has had its head start.
  std::thread release([this] {
    absl::SleepFor(kGoawayHeadStart);
    ReleaseRefusedCalls();
  });
  const absl::Time now = RealWallNow();
  server.Shutdown(absl::ToChronoTime(all_done ? now + kShutdownSettle : now));
  release.join();
}

std::shared_ptr<ScopeLimits> ServerResilienceImpl::MakeLimits(absl::string_view scope,
                                                              const ThrottleSettings& settings,
                                                              const ScopeLimits* previous) {
  auto limits = std::make_shared<ScopeLimits>();
  limits->scope = std::string(scope);
  limits->min_pushback = settings.min_pushback;
  limits->max_pushback = settings.max_pushback;
  limits->adaptive = settings.adaptive.has_value();
  limits->shares = settings.criticality_shares;
  if (settings.retry_shedding.has_value()) {
    limits->retry_shedding = RetryShedding(settings.criticality_shares, *settings.retry_shedding);
  }
  limits->load_report = settings.load_report;
  if (listener_ != nullptr) {
    // Shadow decisions go to the listener, on its thread, instead of stderr
    // (the listener outlives the executor, as for throttle events).
    limits->shadow_log.SetSink([listener = listener_.get(),
                                events = events_.get()](const ShadowLog::Report& r) {
      ShadowDecisionEvent event;
      event.component = "server";
      event.method = std::string(r.method);
      event.policy = r.policy;
      event.would_have_rejected = r.counted;
      event.total = r.total;
      event.since = r.since;
      event.at = r.at;
      event.last_reason = std::string(r.cause);
      events->Post([listener, event = std::move(event)] { listener->OnShadowDecisions(event); });
    });
  }
  // A rebuilt scope keeps its modes (ApplyEnforcement() then sets those the
  // update changed); a new one starts with the file's.
  limits->enforcement.SetAll(previous != nullptr ? previous->enforcement.Load()
                                                 : ScopeEnforcement::Of(settings));
  if (settings.cpu_threshold.has_value()) {
    limits->cpu_threshold = settings.cpu_threshold;
    limits->cpu_meter = &cpu_meter_;
  }
  // A fixed limit that stays fixed keeps its limiter, resized: the calls in
  // flight hold their slots in it and release them there.
  if (previous != nullptr && previous->concurrency != nullptr && !previous->adaptive &&
      !limits->adaptive && settings.max_concurrency > 0 &&
      previous->concurrency->Resize(settings.max_concurrency)) {
    limits->concurrency = previous->concurrency;
  } else {
    limits->concurrency = CreateConcurrencyLimiter(settings, clock_);
  }
  if (settings.rate_per_second > 0 && previous != nullptr && previous->rate != nullptr &&
      previous->rate->rate_per_second() == settings.rate_per_second &&
      previous->rate->burst() == settings.burst) {
    limits->rate = previous->rate;  // the same rate keeps its tokens
  } else if (settings.rate_per_second > 0) {
    // The policy loader checks rate and burst with the bucket's own rules,
    // so this cannot fail for a loaded policy; if it did, the scope would
    // admit nothing and say why rather than crash or admit everything.
    absl::StatusOr<std::unique_ptr<TokenBucket>> bucket =
        TokenBucket::Create(settings.rate_per_second, settings.burst, clock_);
    if (bucket.ok()) {
      limits->rate = *std::move(bucket);
    } else {
      limits->unusable = std::string(bucket.status().message());
    }
  }
  if (settings.per_caller && limits->unusable.empty()) {
    limits->caller_header = settings.per_caller->header;
    const PerCallerLimits::Options& o = settings.per_caller->limits;
    const PerCallerLimits* kept = previous != nullptr ? previous->per_caller.get() : nullptr;
    // A fleet-wide limit per key is made anew with any change of the
    // throttle (its keys start again at their local share).
    if (kept != nullptr && previous->caller_header == limits->caller_header &&
        !o.fleet && !kept->options().fleet &&
        kept->options().max_concurrency == o.max_concurrency &&
        kept->options().rate_per_second == o.rate_per_second &&
        kept->options().burst == o.burst && kept->options().max_keys == o.max_keys) {
      limits->per_caller = previous->per_caller;  // the same keys, slots and tokens
    } else if (settings.per_caller->global && fleet_limits_ == nullptr) {
      limits->unusable = FleetLimitBackend::MissingMessage(settings.per_caller->global->path);
    } else {
      absl::StatusOr<std::unique_ptr<PerCallerLimits>> per_caller =
          settings.per_caller->global
              ? PerCallerFleetLimits(*settings.per_caller, scope, clock_, *fleet_limits_)
              // As the bucket above: cannot fail for a loaded policy.
              : PerCallerLimits::Create(o, clock_);
      if (per_caller.ok()) {
        limits->per_caller = *std::move(per_caller);
      } else {
        limits->unusable = std::string(per_caller.status().message());
      }
    }
  }
  if (settings.global && limits->unusable.empty() && fleet_limits_ == nullptr) {
    // A limit that cannot be enforced admits nothing and says why, as an
    // unusable bucket does (AddServerInterceptors() warned at start).
    limits->unusable = FleetLimitBackend::MissingMessage(settings.global->path);
  } else if (settings.global && limits->unusable.empty()) {
    // Starts the store client's thread; never waits on the store.
    absl::StatusOr<std::unique_ptr<GlobalRateLimit>> global =
        GlobalRateLimit::Create(*settings.global, scope, clock_, *fleet_limits_);
    if (global.ok()) {
      limits->global = *std::move(global);
    } else {
      limits->unusable = std::string(global.status().message());
    }
  }
  return limits;
}

namespace {

// The rejection messages of `method` under `limits`, judged by `shares`
// (`retried`: those of retried attempts under throttle.retryShedding).
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
  std::shared_ptr<ServerMethodState> state = methods_.Find(
      method, [this](const char* name) { return Resolve(name, *CurrentGeneration()); });
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
  MutexLock lock(&mu_);
  state->guarded = guarded_methods_.contains(state->method);
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

absl::Status ServerResilienceImpl::RegisterGuardedService(grpc::ServerBuilder& builder,
                                                      grpc::Service* service,
                                                      absl::string_view full_name) {
  absl::StatusOr<std::unique_ptr<GuardedService>> guard =
      GuardedService::Create(service, full_name, &call_verdicts_);
  if (!guard.ok()) return guard.status();
  builder.RegisterService(guard->get());
  health_.AddService(full_name);
  MutexLock lock(&mu_);
  for (const std::string& method : (*guard)->methods()) guarded_methods_.insert(method);
  guards_.push_back(*std::move(guard));
  return absl::OkStatus();
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
