// File: src/breaker/endpoint_breakers.h
//
// One method's breakers per endpoint (the server an attempt went to, as
// gRPC names its peer: "ipv4:10.0.0.1:443"), and the decision the method's
// own breaker needs from them: is the service as a whole failing, or only
// some of its endpoints?

#ifndef GRPC_RESILIENCE_SRC_BREAKER_ENDPOINT_BREAKERS_H_
#define GRPC_RESILIENCE_SRC_BREAKER_ENDPOINT_BREAKERS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/breaker_state.h"
#include "src/breaker/breaker.h"
#include "src/breaker/recovery_probe.h"
#include "src/breaker/outcome.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// EndpointBreakers
//
// Per endpoint, a breaker made from the method's breaker settings
// (Options::make). It gates nothing: the load balancer, not us, chooses the
// endpoint, and we learn it only after the attempt ended. Each attempt's
// outcome is recorded on its endpoint's breaker (Record()) as an
// Allow()+Record() pair at the attempt's end; an open endpoint breaker
// refuses the observation (it waits out its open period as usual and then
// counts half-open probes: the next attempts gRPC sends there anyway).
//
// The service is failing (ServiceFailing()) when either
//   (a) fewer than two endpoints were seen within Options::recent (nothing
//       to route around: the method's breaker decides alone, exactly as
//       without endpoints; then Record() also lets the method count what an
//       open endpoint breaker refused), or
//   (b) the last Options::unreached_failures outcomes were failures of
//       attempts with no endpoint, with no success on any endpoint in
//       between (the channel could not pick any endpoint: every one is down
//       or unreachable). A run, not one such failure: a failure whose
//       endpoint is unknown among successes says nothing about the service;
//       or
//   (c) of the endpoints seen within `recent`, the share whose breaker is
//       not closed (open or half-open) is >= Options::failing_share
//       (default 1: every endpoint seen recently is open).
// The client lets the method's breaker reject calls locally only then: one
// failing or hung endpoint of several never makes it reject calls the
// healthy ones would serve.
//
// An endpoint fails alone (FailingAlone(), the retry budget's rule: a
// retry after its failure goes to another endpoint, so the budget neither
// refuses it nor is charged for it) when
//   - it is bad: forced open, or not forced closed and either its breaker
//     is not closed or its last Options::alone_failures outcomes were all
//     failures (its breaker may not have opened yet: a window full of
//     earlier successes, or fewer outcomes than the breaker's minimum), and
//   - another endpoint serves: seen within `recent`, not forced open, its
//     breaker closed (or forced closed), its last outcome a success, within
//     `recent`, and
//   - the service is not failing (ServiceFailing() is false).
// A whole-service failure is never "alone": once every endpoint's last
// outcome is a failure, no other one serves.
//
// At a channel's start (Options::listed_endpoints, Options::listed_grace):
// gRPC's round_robin sends every pick to the first endpoint it has
// connected until the others connect, so a failing endpoint may be the only
// one seen for a while although others serve. While fewer endpoints were
// seen within `recent` than the channel's target lists, and less than
// `listed_grace` after the first outcome on an endpoint, the endpoints not
// seen yet count as serving (and as seen, for the failing share): a bad
// endpoint fails alone. After the grace, only what was seen counts, so a
// whole-service failure from the start spends the retry budget from then on.
//
// Bounded: at most Options::max_endpoints endpoints are kept; a new one
// evicts those not seen within `recent`, and then, at the bound, the one
// seen longest ago. A forgotten endpoint starts afresh (closed).
//
// Thread-safe. Record() takes the map's lock for the lookup only; the
// breakers run outside it (they are lock-free while closed).
class EndpointBreakers {
 public:
  struct Options {
    // Share of the endpoints seen recently that must be open or half-open
    // for the service to be failing. In (0, 1]. Defaults to 1.
    double failing_share = 1.0;
    // Endpoints kept at most. In [1, 1024]. Defaults to 64.
    int max_endpoints = 64;
    // An endpoint with no attempt ended on it for this long no longer
    // counts in ServiceFailing() and may be forgotten. In [1 ms, 24 h].
    // Defaults to 30 s.
    absl::Duration recent = absl::Seconds(30);
    // Failures of attempts with no endpoint in a row (no success on any
    // endpoint in between) that make the service failing. >= 1. Defaults
    // to 10.
    int unreached_failures = 10;
    // Failures in a row on one endpoint that make it fail alone while
    // another serves (FailingAlone()). >= 1. Defaults to 3.
    int alone_failures = 3;
    // Endpoints the channel's target lists (an ipv4: or ipv6: list); 0 when
    // not known (a name to resolve). For FailingAlone() at the start.
    int listed_endpoints = 0;
    // How long after the first outcome on an endpoint the listed endpoints
    // not seen yet count as serving. In [0, 1 min]. Defaults to 1 s.
    absl::Duration listed_grace = absl::Seconds(1);
    // Makes the breaker of a new endpoint, with `listener` installed (the
    // breaker calls it on every transition). Required.
    std::function<std::unique_ptr<Breaker>(BreakerListener listener)> make;
    // Told of every transition of an endpoint's breaker, outside every lock
    // of this class, with the breaker's snapshot just after it. Optional.
    std::function<void(const std::string& endpoint, const BreakerTransition& transition,
                       const BreakerSnapshot& snapshot)>
        listener;
    // breaker.recoveryProbe: each endpoint whose breaker (from `make`) is a
    // ThreeStateBreaker gets a RecoveryProbe of its own; Record() says when
    // it wants a probe. Optional.
    std::optional<RecoveryProbe::Options> recovery_probe;
  };

  // One endpoint as Snapshot() shows it.
  struct EndpointState {
    std::string endpoint;
    BreakerSnapshot breaker;
    absl::Time last_seen;      // on the clock given to the constructor
    int64_t outcomes = 0;      // attempts with an outcome that ended on it
    int64_t refused = 0;       // of those, the ones its open breaker did not count
  };

  // InvalidArgument naming the field and the value (`make` and `listener`
  // are not checked).
  static absl::Status Validate(const Options& options);

  // `options` must pass Validate() and have `make`; `clock` must outlive
  // this object.
  EndpointBreakers(Options options, Clock& clock);
  ~EndpointBreakers();

  EndpointBreakers(const EndpointBreakers&) = delete;
  EndpointBreakers& operator=(const EndpointBreakers&) = delete;

  // Record()
  //
  // An attempt that ended on `endpoint` with `outcome` after `latency`.
  // Returns whether the endpoint's breaker counted it: false when it was
  // open (or half-open with no probe slot) and refused it, so that the
  // method's breaker can take it as neutral too (the endpoint is already
  // known bad; its failures say nothing new about the service). An empty
  // `endpoint` (the attempt reached no server, as far as we know) counts
  // only for ServiceFailing() (b) and returns true. kNeutral outcomes only mark the
  // endpoint as seen.
  //
  // With Options::recovery_probe, a failure also asks the endpoint's
  // RecoveryProbe for a probe; when one is due now (StartIfDue() said yes),
  // `due` gets it: the caller sends the probe to `endpoint` and reports the
  // answer with OnAnswer() (the pointer keeps the endpoint's breaker alive
  // even if the endpoint is forgotten meanwhile).
  bool Record(const std::string& endpoint, Outcome outcome, absl::Duration latency,
              std::shared_ptr<RecoveryProbe>* due = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // ServiceFailing()
  //
  // The definition above, at the clock's Now().
  bool ServiceFailing() ABSL_LOCKS_EXCLUDED(mu_);

  // FailingAlone()
  //
  // The definition above, at the clock's Now(), for `endpoint` (an attempt
  // just ended on it and was recorded); false for an empty or unknown one.
  bool FailingAlone(const std::string& endpoint) ABSL_LOCKS_EXCLUDED(mu_);

  // Check()
  //
  // Whether the library's endpoint picker (src/routing) may send an
  // attempt of this method to `endpoint` now:
  //   - kForcedOpen: an operator forced it open; it gets no attempt;
  //   - kBreakerOpen: not forced closed and its breaker is not closed;
  //   - kProbe: likewise, but `probe` is set and no attempt went there for
  //     `probe_every`: this attempt should go there, so that the breaker
  //     sees the attempts its open period ends with (an open endpoint
  //     breaker gates nothing itself: Record() asks it at the attempt's
  //     end). The slot is taken: the next kProbe comes `probe_every` later;
  //   - kRecovered: passes, and is the first Check() since the breaker
  //     closed again (the picker restarts the endpoint's slow start);
  //   - kPass otherwise, unknown endpoints included.
  enum class Gate { kPass, kRecovered, kProbe, kBreakerOpen, kForcedOpen };
  Gate Check(const std::string& endpoint, bool probe,
             absl::Duration probe_every = absl::Seconds(1)) ABSL_LOCKS_EXCLUDED(mu_);

  // Control()
  //
  // An operator's command on one endpoint's breaker (Breaker::Control()).
  // The load balancer still picks the endpoint (health checking, or an
  // outlier detection the policy file writes, not this class, takes one out
  // of the rotation): forcing it open makes
  // its outcomes refused and counts it as failing in ServiceFailing(c);
  // forcing it closed counts them and never as failing. A forced endpoint is
  // kept (not evicted when unseen) until it is set back to automatic. False
  // when `endpoint` is not kept (never seen, or forgotten).
  bool Control(const std::string& endpoint, BreakerCommand command) ABSL_LOCKS_EXCLUDED(mu_);

  // Snapshot()
  //
  // Every endpoint kept, sorted by name.
  std::vector<EndpointState> Snapshot() ABSL_LOCKS_EXCLUDED(mu_);

  Clock& clock() const { return clock_; }
  const Options& options() const { return options_; }

 private:
  struct Entry;

  // The entry of `endpoint`, made (and the map bounded) when new.
  std::shared_ptr<Entry> Find(const std::string& endpoint, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Evict(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts as failing for ServiceFailing() (c): forced open, or not forced
  // and its breaker not closed.
  static bool Failing(const Entry& entry);
  // How many of `recent` endpoints seen recently failing make the service
  // failing: (a) and (c).
  int FailingBound(int recent) const;

  const Options options_;
  Clock& clock_;
  Mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  // entries_.size(), readable without the lock.
  std::atomic<int> known_{0};
  // Failures with no endpoint since the last success on any; for (b).
  std::atomic<int64_t> unreached_in_a_row_{0};
  // When the first outcome on an endpoint was recorded (Unix ns; 0: none
  // yet); for the listed endpoints' grace.
  std::atomic<int64_t> first_outcome_ns_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_ENDPOINT_BREAKERS_H_
