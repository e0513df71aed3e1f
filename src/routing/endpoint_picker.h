// File: src/routing/endpoint_picker.h
//
// The choice of the endpoint (one server address) of every attempt of a
// channel's unary calls: power of two choices over a cost made of calls in
// flight, recent latency, recent errors and the load the server reports,
// with a slow start for endpoints that just joined or came back. Pure C++
// and Abseil: the gRPC glue (which endpoints exist, which are connected,
// which a method's breaker has opened) is src/client_interceptors/'s.

#ifndef GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_PICKER_H_
#define GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_PICKER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"
#include "src/core/random_source.h"
#include "src/routing/endpoint_estimate.h"

namespace resilience {

// EndpointPicker
//
// One per channel. Endpoints are named as gRPC names a peer
// ("ipv4:10.0.0.1:443"), so that the names match the per-endpoint breakers'
// (src/breaker/endpoint_breakers.h).
//
// Pick(): among the endpoints the caller allows (`usable`), those the call
// has not tried yet are preferred; of the preferred set, two distinct ones
// are drawn at random (seeded) and the one of lower Cost() wins (one
// candidate: it wins). Cost() grows with
//   - calls in flight on the endpoint (+1, so an idle one is not free),
//   - its latency estimate: a peak-sensitive EWMA (a sample above the
//     estimate is taken at once, one below decays it with
//     Options::latency_decay), a failed attempt counting as at least
//     Options::failure_latency (a replica that fails fast must not look fast),
//   - its recent error share (an EWMA of 0/1 with Options::error_decay),
//   - the utilization its server last reported (ORCA, in [0, 1]; above 1 is
//     taken as 1), plus the report's share per call for each call sent
//     there since beyond those it counted (a report is as old as the last
//     answer), so that a replica near its limit gets fewer calls before it
//     rejects any;
// and shrinks with its slow-start weight: an endpoint that joined (or
// Rejoin()ed: reconnected, its breaker closed again) less than
// Options::slow_start ago has weight rising linearly from 0.1 to 1.
// An endpoint with no latency sample yet takes the mean estimate of the
// others (or Options::initial_latency when none has one). An estimate ages:
// with no sample for Options::latency_decay it moves toward the mean of the
// others, reaching it one latency_decay later, so that a replica that was
// slow once gets tried again; the error share does the same with
// Options::error_decay (toward the others' mean, or 0 with no other), a
// reported load with latency_decay.
//
// Thread-safe; Pick(), Started() and Ended() run on every attempt and take
// one uncontended lock each.
class EndpointPicker {
 public:
  struct Options {
    // How long a joining endpoint's weight takes to rise from 0.1 to 1.
    // Zero: no slow start. In [0, 10 min]. Defaults to 10 s.
    absl::Duration slow_start = absl::Seconds(10);
    // Time constant of the latency EWMA and of its ageing. In [1 ms, 1 h].
    // Defaults to 2 s.
    absl::Duration latency_decay = absl::Seconds(2);
    // Time constant of the error-share EWMA. In [1 ms, 1 h]. Defaults to 5 s.
    absl::Duration error_decay = absl::Seconds(5);
    // The least latency a failed attempt counts as. In [0, 1 h]. Defaults
    // to 250 ms.
    absl::Duration failure_latency = absl::Milliseconds(250);
    // The estimate of an endpoint when no endpoint has a sample. In
    // (0, 1 h]. Defaults to 1 ms.
    absl::Duration initial_latency = absl::Milliseconds(1);
    // Seed of the random draws.
    uint64_t seed = 0;
  };

  // One endpoint: the handle a call holds from Pick() to Ended(). It stays
  // valid after the endpoint left the set (SetEndpoints()).
  class Endpoint;

  // Why an endpoint is out, as the caller (the glue) tells the picker for
  // the status page: it is recorded by Exclude() and shown by Snapshot().
  enum class Out {
    kNo,            // in the rotation
    kConnecting,    // its connection is not ready (connecting, failed)
    kBreakerOpen,   // a method's breaker for it is open
    kForcedOpen,    // an operator forced it open: it gets no attempt at all
  };

  // One endpoint as Snapshot() shows it.
  struct EndpointStats {
    std::string name;
    int64_t picks = 0;            // times Pick() returned it
    int64_t retries_here = 0;     // of those, picks for a call's 2nd+ attempt
    int in_flight = 0;
    absl::Duration latency;       // the estimate (zero: no sample yet)
    double error_share = 0;       // the EWMA, in [0, 1]
    std::optional<double> load;   // the last reported utilization
    double weight = 1;            // slow-start weight, in [0.1, 1]
    double cost = 0;              // Cost() now
    Out out = Out::kNo;
    absl::Time joined;            // on the picker's clock
  };

  // InvalidArgument naming the field and the value.
  static absl::Status Validate(const Options& options);

  // `options` must pass Validate(); `clock` must outlive the picker.
  EndpointPicker(Options options, Clock& clock);
  ~EndpointPicker();

  EndpointPicker(const EndpointPicker&) = delete;
  EndpointPicker& operator=(const EndpointPicker&) = delete;

  // SetEndpoints()
  //
  // The endpoints now (a resolution's result). Names already present keep
  // their estimates; new ones join (slow start); missing ones leave (handles
  // held by calls stay valid; their Ended() is then only counted on the
  // handle; a name that comes back later joins afresh). Duplicates are
  // taken once. The endpoints of the first call that names any join with
  // full weight: a channel's start is not a slow start.
  void SetEndpoints(const std::vector<std::string>& names) ABSL_LOCKS_EXCLUDED(mu_);

  // Pick()
  //
  // The endpoint for an attempt: nullptr when `usable` allows none. `tried`
  // are the endpoints this call's earlier attempts went to (preferred
  // against, not excluded: with every usable one tried, the pick is among
  // them). `retry`: the call's 2nd or later attempt (counted in
  // retries_here). `usable` runs under the picker's lock and must not call
  // back into the picker.
  std::shared_ptr<Endpoint> Pick(absl::FunctionRef<bool(const Endpoint&)> usable,
                                 absl::Span<const Endpoint* const> tried, bool retry)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Started() / Ended()
  //
  // An attempt sent to `endpoint` / ended there after `latency`, failed or
  // not (a local cancellation or a loser of hedging: neutral, only the
  // in-flight count drops), with the utilization its server reported, if
  // any.
  enum class Result { kSuccess, kFailure, kNeutral };
  void Started(Endpoint& endpoint) ABSL_LOCKS_EXCLUDED(mu_);
  void Ended(Endpoint& endpoint, absl::Duration latency, Result result,
             std::optional<double> load) ABSL_LOCKS_EXCLUDED(mu_);

  // Rejoin()
  //
  // The endpoint came back (its connection is ready again, its breaker
  // closed again): it restarts its slow start, and its error share,
  // latency estimate and reported load start afresh (calls in flight are
  // kept). No effect for an unknown name.
  void Rejoin(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

  // Exclude()
  //
  // Records why the glue leaves `name` out of its `usable` (kNo: it is in
  // again), for Snapshot(). It does not itself change Pick(). No effect for
  // an unknown name.
  void Exclude(const std::string& name, Out out) ABSL_LOCKS_EXCLUDED(mu_);

  // Names(): the endpoints now, in SetEndpoints() order.
  std::vector<std::string> Names() ABSL_LOCKS_EXCLUDED(mu_);

  // Snapshot(): every endpoint now, in SetEndpoints() order.
  std::vector<EndpointStats> Snapshot() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // An endpoint's estimates (src/routing/endpoint_estimate.h) and counters
  // (endpoint_picker.cc), which mu_ guards: every access goes through
  // StateOf(), so that clang checks it.
  struct EndpointState;
  EndpointState& StateOf(const Endpoint& endpoint) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  // options_ in the units of the arithmetic.
  const EndpointEstimate::Tuning tuning_;
  Clock& clock_;
  SplitMixRandom random_;
  Mutex mu_;
  std::vector<std::shared_ptr<Endpoint>> endpoints_ ABSL_GUARDED_BY(mu_);
  bool first_set_ ABSL_GUARDED_BY(mu_) = true;
};

// EndpointPicker::Endpoint
//
// Its name is read without the lock (it never changes); the rest is the
// picker's, under its lock.
class EndpointPicker::Endpoint {
 public:
  explicit Endpoint(std::string name);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& name() const { return name_; }

 private:
  friend class EndpointPicker;
  const std::string name_;
  // Estimates and counters: the picker's, under its lock.
  const std::unique_ptr<EndpointState> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ROUTING_ENDPOINT_PICKER_H_
