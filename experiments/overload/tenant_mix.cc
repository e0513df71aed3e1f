#include "experiments/overload/tenant_mix.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/overload/simulated_throttle.h"
#include "experiments/overload/worker_queue_simulation.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/limits/per_caller_limits.h"

namespace overload {
namespace {

using resilience::Criticality;
using resilience::Outcome;
using resilience::PerCallerLimits;

double Capacity(const TenantConfig& c) {
  return c.workers / absl::ToDoubleSeconds(c.service_time);
}

absl::StatusOr<TenantRun> RunOne(const TenantConfig& c, const Policy& policy, bool noisy,
                                 const std::vector<TenantCall>& calls,
                                 const std::vector<WorkerQueueSimulation::Call>& timing) {
  resilience::SimulatedClock clock;
  absl::StatusOr<SimulatedThrottle> throttle = SimulatedThrottle::Create(policy, clock);
  if (!throttle.ok()) return throttle.status();
  TenantRun run;
  run.tenants.resize(c.tenants);
  std::vector<std::string> keys;
  for (int i = 0; i < c.tenants; ++i) keys.push_back(TenantKey(i));
  std::vector<PerCallerLimits::Slot> slots(calls.size());
  const auto admit = [&](size_t i) {
    const TenantCall& call = calls[i];
    if (call.tenant == 0 && !noisy) return false;
    TenantResult& r = run.tenants[call.tenant];
    ++r.offered;
    // As the throttle interceptor: the caller's limits first, then the
    // method's; a caller's slot goes back when the method refuses.
    if (throttle->per_caller != nullptr) {
      PerCallerLimits::Admission admission = throttle->per_caller->TryAcquire(
          keys[call.tenant], throttle->shares, Criticality::kCritical);
      if (admission.verdict != PerCallerLimits::Verdict::kAdmitted) {
        ++r.rejected;
        return false;
      }
      slots[i] = std::move(admission.slot);
    }
    if (throttle->limiter != nullptr && !throttle->limiter->TryAcquire()) {
      slots[i].Release();
      ++r.rejected;
      return false;
    }
    return true;
  };
  const auto finish = [&](size_t i, absl::Duration latency) {
    const bool in_deadline = latency <= c.deadline;
    TenantResult& r = run.tenants[calls[i].tenant];
    ++(in_deadline ? r.ok_in_deadline : r.late);
    if (throttle->limiter != nullptr) {
      throttle->limiter->Release(in_deadline ? Outcome::kSuccess : Outcome::kFailure, latency);
    }
    slots[i].Release();
  };
  WorkerQueueSimulation(c.workers, clock).Run(timing, admit, finish);
  return run;
}

}  // namespace

std::vector<TenantCall> MakeTenantCalls(const TenantConfig& c) {
  std::vector<TenantCall> calls;
  const double share = Capacity(c) / c.tenants;
  const double end = absl::ToDoubleSeconds(c.duration);
  for (int tenant = 0; tenant < c.tenants; ++tenant) {
    const uint64_t stream = c.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(tenant) * 2 + 1;
    resilience::SplitMixRandom arrivals(stream);
    resilience::SplitMixRandom services(stream ^ 0x5851f42d4c957f2dULL);
    const double rate = share * (tenant == 0 ? c.noisy_load : c.quiet_load);
    double t = 0;
    while (rate > 0) {
      t += -std::log(1.0 - arrivals.NextUniform()) / rate;
      if (t >= end) break;
      calls.push_back(
          TenantCall{absl::Seconds(t), c.service_time * (0.5 + services.NextUniform()), tenant});
    }
  }
  std::stable_sort(calls.begin(), calls.end(), [](const TenantCall& a, const TenantCall& b) {
    return a.arrival < b.arrival;
  });
  return calls;
}

std::string TenantKey(int tenant) { return absl::StrCat("tenant-", tenant); }

std::vector<Policy> TenantPolicies(const TenantConfig& c) {
  const int method_limit = 2 * c.workers;
  const double share = Capacity(c) / c.tenants;
  const std::string key = absl::StrFormat(R"("key": {"header": "%s"})", kTenantHeader);
  return {
      {"shared", absl::StrCat(R"({"maxConcurrency": )", method_limit, "}")},
      {"per-caller-rate",
       absl::StrFormat(R"({"maxConcurrency": %d, "perCaller": {%s, "ratePerSecond": %g, )"
                       R"("burst": %d}})",
                       method_limit, key, share, std::max(1, static_cast<int>(share / 5)))},
      {"per-caller-concurrency",
       absl::StrFormat(R"({"maxConcurrency": %d, "perCaller": {%s, "maxConcurrency": %d}})",
                       method_limit, key,
                       std::max(1, (method_limit + c.tenants - 1) / c.tenants))},
  };
}

absl::Status ValidateTenantConfig(const TenantConfig& config) {
  if (config.workers < 1 || config.service_time <= absl::ZeroDuration() ||
      config.duration <= absl::ZeroDuration() || config.deadline <= absl::ZeroDuration() ||
      config.tenants < 2 || !(config.quiet_load >= 0) || !(config.noisy_load >= 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tenant mix: needs workers >= 1 (got %d), service_time, deadline and duration > 0 (got "
        "%s, %s, %s), tenants >= 2 (got %d), loads >= 0 (got quiet %g, noisy %g)",
        config.workers, absl::FormatDuration(config.service_time),
        absl::FormatDuration(config.deadline), absl::FormatDuration(config.duration),
        config.tenants, config.quiet_load, config.noisy_load));
  }
  return absl::OkStatus();
}

absl::StatusOr<TenantMixResult> RunTenantPolicies(
    const TenantConfig& config, const std::vector<Policy>& policies,
    absl::FunctionRef<absl::StatusOr<TenantRun>(const Policy&, bool noisy)> run_one) {
  if (absl::Status s = ValidateTenantConfig(config); !s.ok()) return s;
  TenantMixResult result;
  result.config = config;
  for (const Policy& policy : policies) {
    double with = 0;
    for (const bool noisy : {true, false}) {
      absl::StatusOr<TenantRun> run = run_one(policy, noisy);
      if (!run.ok()) return run.status();
      run->policy = policy.name;
      run->noisy = noisy;
      int64_t quiet_ok = 0;
      for (size_t t = 1; t < run->tenants.size(); ++t) quiet_ok += run->tenants[t].ok_in_deadline;
      run->quiet_goodput_per_second = quiet_ok / absl::ToDoubleSeconds(config.duration);
      if (noisy) {
        with = run->quiet_goodput_per_second;
      } else {
        result.quiet_loss.push_back(
            run->quiet_goodput_per_second > 0 ? 1.0 - with / run->quiet_goodput_per_second : 0.0);
      }
      result.runs.push_back(*std::move(run));
    }
  }
  return result;
}

absl::StatusOr<TenantMixResult> RunTenantsSimulated(const TenantConfig& config,
                                                    const std::vector<Policy>& policies) {
  if (absl::Status s = ValidateTenantConfig(config); !s.ok()) return s;
  const std::vector<TenantCall> calls = MakeTenantCalls(config);
  std::vector<WorkerQueueSimulation::Call> timing;
  for (const TenantCall& call : calls) timing.push_back({call.arrival, call.service});
  return RunTenantPolicies(config, policies, [&](const Policy& policy, bool noisy) {
    return RunOne(config, policy, noisy, calls, timing);
  });
}

}  // namespace overload
