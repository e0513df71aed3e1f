#include "experiments/overload/grpc_run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"
#include "grpc_resilience/policy.h"

namespace overload {
namespace {

using resilience::Mutex;
using resilience::MutexLock;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr absl::Duration kTick = absl::Milliseconds(100);

// What the clients saw, per phase.
class Recorder {
 public:
  Recorder(const Config& config, const std::string& policy)
      : config_(config),
        settle_(std::min(absl::Seconds(2), config.phase_length / 2)),
        phases_(EmptyPhases(config, policy)),
        latencies_(phases_.size()),
        settled_(phases_.size()) {}

  void Offered(int phase) {
    MutexLock lock(&mu_);
    ++phases_[phase].offered;
  }

  void Unsent(int phase) {
    MutexLock lock(&mu_);
    ++phases_[phase].unsent;
  }

  void Answered(int phase, absl::Duration into_phase, const grpc::Status& status,
                absl::Duration latency) {
    MutexLock lock(&mu_);
    PhaseResult& p = phases_[phase];
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++p.rejected;
      return;
    }
    ++p.admitted;
    if (status.ok() && latency <= config_.deadline) {
      ++p.completed_in_deadline;
    } else {
      ++p.expired;
    }
    const double ms = absl::ToDoubleMilliseconds(std::min(latency, config_.deadline));
    latencies_[phase].push_back(ms);
    if (into_phase >= settle_) settled_[phase].push_back(ms);
  }

  std::vector<PhaseResult> Finish(bool has_limit, const std::vector<LimitSample>& samples) {
    MutexLock lock(&mu_);
    Summarize(config_, has_limit, samples, latencies_, settled_, phases_);
    return phases_;
  }

 private:
  const Config& config_;
  const absl::Duration settle_;
  Mutex mu_;
  std::vector<PhaseResult> phases_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<double>> latencies_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<double>> settled_ ABSL_GUARDED_BY(mu_);
};

// One call in flight; deletes itself when answered.
struct Call {
  grpc::ClientContext context;
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  absl::Time sent;
  int phase;
  absl::Duration into_phase;
};

absl::StatusOr<std::vector<PhaseResult>> RunPolicy(const Config& c, const Policy& policy) {
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileJson(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.name, ": ", policies.status().message()));
  }
  const int phases = static_cast<int>(c.loads.size() * c.capacities.size());
  const double most = *std::max_element(c.capacities.begin(), c.capacities.end());
  const auto workers_in = [&](int p) {
    return std::max(1, static_cast<int>(std::lround(
                           c.workers * c.capacities[p % c.capacities.size()])));
  };
  cache_service::BoundedCapacityService service(
      std::max(1, static_cast<int>(std::lround(c.workers * most))), workers_in(0), c.service_time,
      c.seed);
  absl::StatusOr<cache_service::GuardedBackend> backend =
      cache_service::ServeGuarded(service, *std::move(policies));
  if (!backend.ok()) return backend.status();
  const std::shared_ptr<resilience::ServerResilience>& resilience = backend->resilience;
  grpc::Server* const server = backend->server.get();
  cache::v1::CacheService::Stub* const stub = backend->stub.get();

  // One call first, so that no measured call waits for the connection.
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    cache::v1::GetReq request;
    cache::v1::GetResp response;
    request.set_key("warm-up");
    stub->Get(&context, request, &response);
  }
  Recorder recorder(c, policy.name);
  std::atomic<int64_t> outstanding{0};
  const bool has_limit = !policy.throttle_json.empty();
  std::vector<LimitSample> samples;
  std::atomic<bool> sampling{true};
  const absl::Time start = absl::Now() + absl::Milliseconds(50);
  std::thread sampler([&] {
    absl::Time next = start + kTick;
    while (sampling.load()) {
      absl::SleepFor(next - absl::Now());
      // Stamped with when it was read. After a stall (this thread, like the
      // whole process, did not run), the ticks it missed are missing rather
      // than copies of one stale reading.
      const absl::Time now = absl::Now();
      if (has_limit) {
        samples.push_back(
            LimitSample{now - start, resilience->Stats(kGet).concurrency_limit, false});
      }
      next += kTick;
      if (next < now) next = now + kTick;
    }
  });

  const double capacity = c.workers / absl::ToDoubleSeconds(c.service_time);
  resilience::SplitMixRandom arrivals(c.seed);
  bool paused = false;
  for (int p = 0; p < phases; ++p) {
    const absl::Time phase_start = start + c.phase_length * p;
    absl::SleepFor(phase_start - absl::Now());
    service.SetWorkers(workers_in(p));
    const double rate = c.loads[p / c.capacities.size()] * capacity;
    const absl::Time phase_end = phase_start + c.phase_length;
    absl::Time next = phase_start;
    while (true) {
      next += absl::Seconds(-std::log(1.0 - arrivals.NextUniform()) / rate);
      if (next >= phase_end) break;
      if (const absl::Duration wait = next - absl::Now(); wait > absl::ZeroDuration()) {
        absl::SleepFor(wait);
      }
      if (!paused && next - start >= c.pause_at) {
        paused = true;
        absl::SleepFor(c.pause_for);
      }
      recorder.Offered(p);
      // An arrival reached more than a deadline after its time means this
      // process or the machine stalled. Sent now, it and all the others
      // overdue would leave at once: a burst the schedule never asked for
      // (at 5C, 2000 calls for each second of stall) whose calls expire
      // before the server has even matched them (it sees none, every client
      // times out, for as long as the backlog lasts). Counted, not sent.
      if (absl::Now() - next > c.deadline) {
        recorder.Unsent(p);
        continue;
      }
      auto* call = new Call;
      call->request.set_key("k");
      call->sent = absl::Now();
      call->phase = p;
      call->into_phase = call->sent - phase_start;
      call->context.set_deadline(absl::ToChronoTime(call->sent + c.deadline));
      outstanding.fetch_add(1);
      stub->async()->Get(&call->context, &call->request, &call->response,
                         [call, &recorder, &outstanding](grpc::Status status) {
                           recorder.Answered(call->phase, call->into_phase, status,
                                             absl::Now() - call->sent);
                           delete call;
                           outstanding.fetch_sub(1);
                         });
    }
  }
  // Every call ends by its deadline; a little slack for the last answers.
  const absl::Time give_up = absl::Now() + c.deadline + absl::Seconds(5);
  while (outstanding.load() > 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  sampling.store(false);
  sampler.join();
  service.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  while (outstanding.load() > 0) absl::SleepFor(absl::Milliseconds(5));
  return recorder.Finish(has_limit, samples);
}

// Runs of one policy, at most, while the load generator stalls in them.
constexpr int kAttempts = 3;

// "" when the load generator kept up with every phase of `run`; otherwise
// the first phase where more than 1% of the arrivals (and more than 5) went
// unsent, and how many.
std::string StallIn(const std::vector<PhaseResult>& run) {
  for (const PhaseResult& p : run) {
    if (p.unsent > 5 && p.unsent * 100 > p.offered) {
      return absl::StrCat("phase ", p.phase, ": ", p.unsent, " of ", p.offered,
                          " arrivals unsent, the load generator fell behind");
    }
  }
  return "";
}

}  // namespace

Config GrpcDefaults() {
  Config c;
  c.workers = 8;
  c.service_time = absl::Milliseconds(20);
  c.deadline = absl::Milliseconds(60);
  c.phase_length = absl::Seconds(2);
  return c;
}

absl::StatusOr<Result> RunGrpc(const Config& config, const std::vector<Policy>& policies) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  Result result;
  result.config = config;
  {
    Config light = config;
    light.loads = {0.1};
    light.capacities = {1};
    light.phase_length = absl::Seconds(3);
    light.pause_for = absl::ZeroDuration();
    absl::StatusOr<std::vector<PhaseResult>> run = RunPolicy(light, Policy{"none", ""});
    if (!run.ok()) return run.status();
    result.unloaded_p99_ms = (*run)[0].p99_ms;
  }
  std::vector<std::vector<PhaseResult>> runs;
  for (const Policy& policy : policies) {
    absl::StatusOr<std::vector<PhaseResult>> run = RunPolicy(config, policy);
    if (!run.ok()) return run.status();
    // A run in which the load generator stalled measured the machine, not
    // the policy: it is made again (twice at most), and said so.
    for (int attempt = 1; attempt < kAttempts; ++attempt) {
      const std::string stall = StallIn(*run);
      if (stall.empty()) break;
      result.notes.push_back(absl::StrCat(policy.name, ": run ", attempt, " discarded (", stall,
                                          "); made again"));
      run = RunPolicy(config, policy);
      if (!run.ok()) return run.status();
    }
    if (const std::string stall = StallIn(*run); !stall.empty()) {
      result.notes.push_back(absl::StrCat(policy.name, ": kept a run with a stall (", stall,
                                          ") after ", kAttempts, " attempts"));
    }
    int64_t in_deadline = 0;
    for (const PhaseResult& p : *run) in_deadline += p.completed_in_deadline;
    result.total_goodput.emplace_back(
        policy.name,
        in_deadline / absl::ToDoubleSeconds(config.phase_length * static_cast<int64_t>(run->size())));
    runs.push_back(*std::move(run));
  }
  for (size_t p = 0; p < runs.front().size(); ++p) {
    for (const std::vector<PhaseResult>& run : runs) result.phases.push_back(run[p]);
  }
  return result;
}

}  // namespace overload
