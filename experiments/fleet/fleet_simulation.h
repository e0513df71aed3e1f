// File: experiments/fleet/fleet_simulation.h
//
// The state and event loop behind Simulate() (fleet_simulator.h): the event
// queue, the clients (fleet_simulation_client.cc) and the servers
// (fleet_simulation_server.cc). Internal to the simulator; single-threaded.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATION_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <vector>

#include "absl/status/status.h"
#include "experiments/fleet/fleet_config.h"
#include "experiments/fleet/fleet_policy.h"
#include "experiments/fleet/fleet_result.h"
#include "src/breaker/breaker.h"
#include "src/breaker/endpoint_breakers.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/limits/call_duration_estimate.h"
#include "src/limits/concurrency_limiter.h"
#include "src/retry/retry_budget.h"
#include "src/retry/retry_decider.h"

namespace fleet {

class FleetSimulation {
 public:
  FleetSimulation(const Config& config, const FleetPolicy& policy);
  // Runs to the end; call once.
  RunResult Run();

 private:
  enum class EventType : uint8_t {
    kArrival,         // the next call arrives at some client
    kDeliver,         // attempt `a` reaches its server
    kWorkDone,        // server `a` finished attempt `b` (if `extra` is still its epoch)
    kAnswer,          // attempt `a` (generation `b`): its answer (`code`, pushback `extra` ns or -1)
    kAttemptTimeout,  // attempt `a` (generation `b`): its deadline
    kRetry,           // call `a` sends its next attempt
    kTriggerStart,
    kTriggerEnd,
  };
  struct Event {
    int64_t t;  // ns from the start
    uint64_t seq;
    EventType type;
    int32_t code;
    uint32_t a;
    uint32_t b;
    int64_t extra;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Client {
    std::unique_ptr<resilience::SplitMixRandom> random;
    std::unique_ptr<resilience::RetryBudget> throttle;
    std::unique_ptr<resilience::RetryDecider> decider;
    std::unique_ptr<resilience::Breaker> breaker;
    // The method's breakers per server, when its policy has them
    // (breaker.endpoints, on by default), as the client chain's BreakerStage
    // runs them.
    std::unique_ptr<resilience::EndpointBreakers> endpoints;
    int next_server = 0;
  };
  struct Call {
    uint32_t client = 0;
    int64_t deadline = 0;
    int attempts = 0;
    size_t bin = 0;
  };
  struct Attempt {
    uint32_t call = 0;
    int32_t server = 0;
    int64_t sent = 0;
    int64_t deadline = 0;
    int64_t admitted_at = 0;
    uint32_t gen = 0;          // bumped at each reuse of the slot; events carry it
    bool per_attempt = false;  // its deadline is the per-attempt timeout's
    bool in_use = false;
    bool client_open = false;  // the client waits for it
    bool server_open = false;  // a server holds it (queued or running)
    resilience::Admission admission;
  };
  struct Server {
    int busy = 0;
    std::deque<uint32_t> queue;
    std::unique_ptr<resilience::ConcurrencyLimiter> limiter;
    std::unique_ptr<resilience::CallDurationEstimate> durations;
    int64_t epoch = 0;
    bool down = false;
  };

  void Schedule(int64_t t, EventType type, uint32_t a, uint32_t b = 0, int32_t code = 0,
                int64_t extra = 0);
  Bin& BinAt(int64_t t);
  void SetNow(int64_t t);

  // Clients (fleet_simulation_client.cc).
  void MakeClients();
  void OnArrival();
  void StartAttempt(uint32_t call);
  void OnAnswer(uint32_t attempt, uint32_t gen, absl::StatusCode code, int64_t pushback_ns);
  void OnAttemptTimeout(uint32_t attempt, uint32_t gen);
  // The client's answer to attempt `id` (held by no server now) at `t`.
  void Answer(int64_t t, uint32_t id, absl::StatusCode code, int64_t pushback_ns = -1);
  void Decide(uint32_t call, const resilience::AttemptOutcome& outcome);
  void FinishCall(uint32_t call, bool succeeded);
  uint32_t NewAttempt();
  void MaybeFree(uint32_t attempt);
  // BreakerStage::Admit() and Record(): the method's breaker, its rejection
  // waived while the service is not failing (per-endpoint breakers);
  // `endpoint` is the server that answered, -1 for none (the attempt timed
  // out or was refused: gRPC names no peer then).
  resilience::Admission Admit(Client& client);
  void RecordOutcome(Attempt& attempt, absl::StatusCode code, resilience::LocalEnd end,
                     int endpoint);

  // Servers (fleet_simulation_server.cc).
  void MakeServers();
  void ResetServerState(Server& server);
  void OnDeliver(uint32_t attempt);
  void StartWork(uint32_t server, uint32_t attempt);
  void OnWorkDone(uint32_t server, uint32_t attempt, int64_t epoch);
  void OnTriggerStart();
  void OnTriggerEnd();
  // The servers' speed now (1 = full), and the extra answer latency.
  double Speed() const;
  int64_t ExtraLatency() const;

  const Config config_;
  const FleetPolicy policy_;
  const int64_t bin_ns_;
  const int64_t end_ns_;  // no call arrives after this
  const int64_t delay_ns_;
  const absl::Time t0_;
  resilience::SimulatedClock clock_;
  resilience::SplitMixRandom random_;  // arrivals, service times
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  bool trigger_on_ = false;
  std::vector<Client> clients_;
  std::vector<Server> servers_;
  std::vector<Call> calls_;
  std::vector<uint32_t> free_calls_;
  std::vector<Attempt> attempts_;
  std::vector<uint32_t> free_attempts_;
  RunResult result_;
};

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATION_H_
