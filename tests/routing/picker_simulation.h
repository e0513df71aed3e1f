// A closed-loop discrete-event model of a channel's callers, EndpointPicker
// and the replicas behind it, on a SimulatedClock: what the picker does to
// a service's latencies, in milliseconds of real time.
//
// Each caller sends a call, waits for its answer, thinks, and sends the next.
// Each replica serves `workers` calls at a time (FIFO queue behind them),
// each in its service time spread uniformly by +-`spread`; with a `limit`,
// a call that finds `limit` calls there already is rejected at once, and
// every answer reports the replica's load (its calls over its limit), as a
// server built with the library does.

#ifndef GRPC_RESILIENCE_TESTS_ROUTING_PICKER_SIMULATION_H_
#define GRPC_RESILIENCE_TESTS_ROUTING_PICKER_SIMULATION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/routing/endpoint_picker.h"

namespace resilience::testing {

class PickerSimulation {
 public:
  struct Replica {
    absl::Duration service = absl::Milliseconds(1);
    double spread = 0.5;  // service time uniform in service * [1 - spread, 1 + spread]
    int workers = 4;
    int limit = 0;  // 0: none (no rejection, no load report)
  };
  enum class Routing { kPicker, kUniform };
  struct Config {
    std::vector<Replica> replicas;
    int callers = 4;
    absl::Duration think = absl::Milliseconds(1);  // mean, exponential
    absl::Duration duration = absl::Seconds(20);
    absl::Duration warmup = absl::Seconds(1);  // calls ending before: not counted
    Routing routing = Routing::kPicker;
    bool report_load = true;
    uint64_t seed = 1;
  };
  struct Result {
    std::vector<double> latencies_ms;  // calls ended after the warmup, sorted
    std::vector<int64_t> calls;        // per replica, after the warmup
    std::vector<int64_t> rejected;     // per replica, after the warmup
    std::vector<double> utilization;   // per replica: busy workers / workers, after the warmup
    double Quantile(double q) const {
      if (latencies_ms.empty()) return 0;
      const size_t i = std::min(latencies_ms.size() - 1,
                                static_cast<size_t>(q * static_cast<double>(latencies_ms.size())));
      return latencies_ms[i];
    }
    int64_t Total() const {
      int64_t total = 0;
      for (int64_t c : calls) total += c;
      return total;
    }
  };

  static Result Run(const Config& config) {
    PickerSimulation simulation(config);
    return simulation.Loop();
  }

 private:
  struct Call {
    int caller = 0;
    int replica = 0;
    absl::Time start;
    std::shared_ptr<EndpointPicker::Endpoint> endpoint;
  };
  enum class Kind { kSend, kDone, kRejected };
  struct Event {
    absl::Time at;
    int64_t seq = 0;
    Kind kind = Kind::kSend;
    Call call;
    bool operator>(const Event& other) const {
      return at != other.at ? at > other.at : seq > other.seq;
    }
  };
  struct Server {
    int busy = 0;
    std::deque<Call> queue;
    absl::Time changed;
    double busy_seconds = 0;
  };

  explicit PickerSimulation(const Config& config)
      : config_(config),
        picker_(Seeded(config.seed), clock_),
        random_(config.seed * 7919 + 13),
        servers_(config.replicas.size()) {
    std::vector<std::string> names;
    for (size_t i = 0; i < config.replicas.size(); ++i) {
      names.push_back("ipv4:10.0.0." + std::to_string(i + 1) + ":443");
    }
    picker_.SetEndpoints(names);
    endpoints_ = names;
    start_ = clock_.Now();
    result_.calls.assign(servers_.size(), 0);
    result_.rejected.assign(servers_.size(), 0);
    for (Server& server : servers_) server.changed = start_ + config.warmup;
  }

  // The next call of `caller`, before it is sent.
  static Call Next(int caller) {
    Call call;
    call.caller = caller;
    return call;
  }

  static EndpointPicker::Options Seeded(uint64_t seed) {
    EndpointPicker::Options options;
    options.seed = seed;
    return options;
  }

  void Schedule(absl::Time at, Kind kind, Call call) {
    events_.push(Event{at, next_seq_++, kind, std::move(call)});
  }

  absl::Duration Exponential(absl::Duration mean) {
    return mean * -std::log(1 - random_.NextUniform());
  }

  // Busy workers integrated over time, from the end of the warmup.
  void Account(Server& server, absl::Time now) {
    if (now > server.changed) {
      server.busy_seconds += server.busy * absl::ToDoubleSeconds(now - server.changed);
      server.changed = now;
    }
  }

  void StartService(int replica, Call call, absl::Time now) {
    const Replica& r = config_.replicas[replica];
    Account(servers_[replica], now);
    ++servers_[replica].busy;
    const double factor = 1 - r.spread + 2 * r.spread * random_.NextUniform();
    Schedule(now + r.service * factor, Kind::kDone, std::move(call));
  }

  void Send(int caller, absl::Time now) {
    Call call = Next(caller);
    call.start = now;
    if (config_.routing == Routing::kPicker) {
      call.endpoint = picker_.Pick([](const EndpointPicker::Endpoint&) { return true; }, {}, false);
      call.replica = static_cast<int>(std::find(endpoints_.begin(), endpoints_.end(),
                                                call.endpoint->name()) -
                                      endpoints_.begin());
      picker_.Started(*call.endpoint);
    } else {
      call.replica = static_cast<int>(random_.NextUniform() * servers_.size());
    }
    const Replica& r = config_.replicas[call.replica];
    Server& server = servers_[call.replica];
    if (r.limit > 0 && server.busy + static_cast<int>(server.queue.size()) >= r.limit) {
      Schedule(now + absl::Microseconds(50), Kind::kRejected, std::move(call));
    } else if (server.busy < r.workers) {
      StartService(call.replica, std::move(call), now);
    } else {
      server.queue.push_back(std::move(call));
    }
  }

  void Finish(const Call& call, absl::Time now, bool rejected) {
    const Replica& r = config_.replicas[call.replica];
    Server& server = servers_[call.replica];
    std::optional<double> load;
    if (r.limit > 0 && config_.report_load) {
      load = static_cast<double>(server.busy + server.queue.size() + (rejected ? 1 : 0)) / r.limit;
    }
    if (!rejected) {
      Account(server, now);
      --server.busy;
      if (!server.queue.empty()) {
        Call next = std::move(server.queue.front());
        server.queue.pop_front();
        StartService(call.replica, std::move(next), now);
      }
    }
    if (call.endpoint != nullptr) {
      picker_.Ended(*call.endpoint, now - call.start,
                    rejected ? EndpointPicker::Result::kFailure : EndpointPicker::Result::kSuccess,
                    load);
    }
    if (now >= start_ + config_.warmup) {
      result_.latencies_ms.push_back(absl::ToDoubleMilliseconds(now - call.start));
      ++result_.calls[call.replica];
      if (rejected) ++result_.rejected[call.replica];
    }
    Schedule(now + Exponential(config_.think), Kind::kSend, Next(call.caller));
  }

  Result Loop() {
    for (int c = 0; c < config_.callers; ++c) {
      Schedule(start_ + Exponential(config_.think), Kind::kSend, Next(c));
    }
    const absl::Time end = start_ + config_.duration;
    while (!events_.empty() && events_.top().at < end) {
      Event event = events_.top();
      events_.pop();
      clock_.SetTime(event.at);
      if (event.kind == Kind::kSend) {
        Send(event.call.caller, event.at);
      } else {
        Finish(event.call, event.at, event.kind == Kind::kRejected);
      }
    }
    for (size_t i = 0; i < servers_.size(); ++i) {
      Account(servers_[i], end);
      result_.utilization.push_back(servers_[i].busy_seconds /
                                    (config_.replicas[i].workers *
                                     absl::ToDoubleSeconds(config_.duration - config_.warmup)));
    }
    std::sort(result_.latencies_ms.begin(), result_.latencies_ms.end());
    return std::move(result_);
  }

  const Config config_;
  SimulatedClock clock_;
  EndpointPicker picker_;
  SplitMixRandom random_;
  std::vector<Server> servers_;
  std::vector<std::string> endpoints_;
  absl::Time start_;
  int64_t next_seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  Result result_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_ROUTING_PICKER_SIMULATION_H_
