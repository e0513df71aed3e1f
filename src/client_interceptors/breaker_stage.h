// File: src/client_interceptors/breaker_stage.h
//
// The breaker stage of a call's execution: asks the method's circuit
// breaker before an attempt goes out and tells it how the attempt ended.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/impl/channel_interface.h"
#include "grpcpp/support/status.h"
#include <optional>
#include <string>

#include "grpc_resilience/criticality_level.h"

#include "src/breaker/breaker.h"
#include "src/breaker/enforced_admission.h"
#include "src/breaker/endpoint_breakers.h"
#include "src/client_interceptors/call_counters.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/health_probe_sender.h"
#include "src/client_interceptors/local_status.h"
#include "src/client_interceptors/reconnect_watch.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

// BreakerStage
//
// One per call (a retried call's attempts share it). Without a breaker on
// the method every attempt is admitted and nothing is recorded. The
// breaker may change state inside Admit() and Record(): its listener only
// queues the transition (BreakerEventQueue), so these may be called under
// the call's own lock; the call delivers the events after releasing it.
//
// With per-endpoint breakers (ClientMethodState::endpoint_breakers,
// docs/endpoint-breakers.md), each attempt's outcome also counts against
// the endpoint that served it, and the method's breaker rejects only while
// the service as a whole is failing (EndpointBreakers::ServiceFailing());
// otherwise its rejection is waived and the attempt goes out.
//
// The channel's connection (docs/endpoint-breakers.md, "A probe waits for
// the connection"): while the breaker is not Closed, Admit() tells it
// whether the channel is connected (Breaker::AllowWithConnection()), so
// that no half-open probe is spent on a channel that can reach no server,
// and hurries the channel's reconnection while it is not
// (ReconnectWatch::Hurry()).
//
// Enforcement (breaker.enforcement, MethodEnforcement, read per attempt):
// kShadow turns a rejection the stage would return into an admission that
// records nothing (the attempt goes out; neither the method's breaker nor
// its endpoints' hear of it, as they would not have under enforce) and
// counts it; kOff asks no breaker and records nothing (docs/shadow-mode.md).
class BreakerStage {
 public:
  explicit BreakerStage(const ClientMethodState& state)
      : breaker_(state.breaker.get()),
        endpoints_(state.endpoint_breakers.get()),
        settings_(state.policy),
        probe_(state.probe_sender != nullptr ? state.recovery_probe.get() : nullptr),
        sender_(state.probe_sender),
        reconnect_(state.reconnect),
        tally_(&state.tally),
        enforcement_(&state.tally->enforcement) {}

  bool enabled() const { return breaker_ != nullptr; }

  // ReadCriticality()
  //
  // The call's criticality for the breaker, from the headers the caller
  // sends (`sent`: its resilience-criticality, set by SetCriticality() or
  // PropagateCriticality()), else the method's criticality.default. The
  // header itself goes out as the caller set it (copied to every attempt);
  // the stage adds none (docs/criticality.md).
  template <typename Metadata>
  void ReadCriticality(const Metadata& sent) {
    level_ = settings_->criticality.default_level;
    const auto header = sent.find(kCriticalityKey);
    if (header == sent.end()) return;
    const std::optional<Criticality> claimed =
        ParseCriticality(absl::string_view(header->second.data(), header->second.size()));
    if (claimed.has_value()) level_ = *claimed;
  }
  // Whether Record() wants the attempt's endpoint (ClientContext::peer()):
  // with per-endpoint breakers, and for a half-open probe.
  bool wants_endpoint(const Admission& admission) const {
    return endpoints_ != nullptr || admission.probe();
  }

  // An admission for the next attempt on `channel` (admitted when there is
  // no breaker, or it is off). A rejection of the method's breaker is waived
  // (counted in `counters`) when it has per-endpoint breakers and the
  // service is not failing, unless the breaker is forced open; in shadow
  // mode any other rejection lets the attempt go too, counted as a shadow
  // one, and its outcome is recorded nowhere (EnforcedAdmission()).
  Admission Admit(CallCounters& counters, grpc::ChannelInterface* channel) {
    if (breaker_ == nullptr) return Admission();
    const EnforcementMode mode = enforcement_->breaker();
    if (mode == EnforcementMode::kOff) return Admission();
    bool disconnected = false;
    Admission admission = breaker_->AllowWithConnection(level_, [&] {
      // READY, or IDLE (a call connects it); not CONNECTING nor
      // TRANSIENT_FAILURE.
      const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/false);
      disconnected =
          state == GRPC_CHANNEL_CONNECTING || state == GRPC_CHANNEL_TRANSIENT_FAILURE;
      return !disconnected;
    });
    if (disconnected && reconnect_ != nullptr) reconnect_->Hurry(channel);
    if (!admission.admitted()) MaybeProbe();
    if (admission.admitted() || endpoints_ == nullptr ||
        admission.reason() == RejectReason::kForcedOpen || endpoints_->ServiceFailing()) {
      if (admission.admitted() || mode == EnforcementMode::kEnforce) return admission;
      RejectReason would = RejectReason::kNone;
      admission = EnforcedAdmission(std::move(admission), mode, &would);
      counters.ShadowRejectedByBreaker(would);
      return admission;
    }
    counters.BreakerRejectionWaived();
    return Admission::Waived(endpoints_->clock().Now());
  }

  // UNAVAILABLE "<method>: rejected locally by the circuit breaker ...".
  grpc::Status Rejection(absl::string_view method, const Admission& admission) const {
    return BreakerRejectionStatus(method, breaker_->kind(), admission.reason());
  }

  // EndpointOf()
  //
  // The endpoint an attempt went to, from its ClientContext::peer(): one
  // resolved address ("ipv4:10.0.0.1:443", "ipv6:[::1]:443", "unix:/path").
  // gRPC 1.51 gives an attempt that never reached a server the channel's
  // target instead (grpc_call_get_peer() falls back to it): a list
  // ("ipv4:a,b,c"), a name ("dns:///svc:443", "localhost:50051"), or, for a
  // one-address target, that address itself (then it is that endpoint). All
  // but the last are "no endpoint" (empty).
  static std::string EndpointOf(std::string peer) {
    const absl::string_view p = peer;
    const bool address = absl::StartsWith(p, "ipv4:") || absl::StartsWith(p, "ipv6:") ||
                         absl::StartsWith(p, "unix:") || absl::StartsWith(p, "unix-abstract:");
    if (!address || absl::StrContains(p, ',')) peer.clear();
    return peer;
  }

  // Records an admitted (or waived) attempt's end: `code` as the policy's
  // breaker settings classify it with `local`, and its latency. With
  // per-endpoint breakers the outcome counts against `endpoint` (the
  // attempt's peer; empty: it reached no server) first; an outcome the
  // endpoint's open breaker refused is neutral to the method's breaker (that
  // endpoint is known bad already). Returns whether it was a failure on an
  // endpoint that fails alone (EndpointBreakers::FailingAlone(): its breaker
  // open or its last outcomes failures, while another endpoint serves):
  // AttemptOutcome::endpoint_known_bad, a retry goes elsewhere and the retry
  // budget neither refuses nor pays for it.
  // `pushback`: the server's answer carried grpc-retry-pushback-ms
  // (BreakerSettings::Classify(): neutral to a three-state breaker).
  //
  // A half-open probe that reached no server (UNAVAILABLE with no endpoint:
  // the connection was lost between its admission and its pick) is neutral
  // to the method's breaker: it only frees its slot, and the open period
  // does not grow for it.
  bool Record(Admission& admission, grpc::StatusCode code, LocalEnd local, absl::Time ended,
              const std::string& endpoint = std::string(), bool pushback = false) {
    if (!admission.pending() && !admission.waived()) return false;
    Outcome outcome =
        settings_->breaker.Classify(static_cast<absl::StatusCode>(code), local, pushback);
    const bool unreached_probe = admission.probe() && outcome == Outcome::kFailure &&
                                 code == grpc::StatusCode::UNAVAILABLE &&
                                 local == LocalEnd::kNone && endpoint.empty();
    const absl::Duration latency = ended - admission.start();
    std::shared_ptr<RecoveryProbe> endpoint_probe;
    bool known_bad = false;
    if (endpoints_ != nullptr) {
      const bool counted = endpoints_->Record(endpoint, outcome, latency,
                                              sender_ != nullptr ? &endpoint_probe : nullptr);
      // Asked on failures only: the healthy path takes no lock for it.
      known_bad = outcome == Outcome::kFailure && endpoints_->FailingAlone(endpoint);
      if (!counted) outcome = Outcome::kNeutral;
    }
    if (endpoint_probe != nullptr) {
      // To that endpoint alone, on a channel to its address.
      sender_->Check(endpoint, endpoint_probe->options().health_service,
                     endpoint_probe->options().timeout,
                     [endpoint_probe, tally = *tally_](RecoveryProbe::Answer answer) {
                       CountProbe(*tally, kEndpointProbe, answer);
                       endpoint_probe->OnAnswer(answer);
                     });
    }
    admission.Record(unreached_probe ? Outcome::kNeutral : outcome,
                     latency);  // nothing for a waived one
    if (probe_ != nullptr && outcome == Outcome::kFailure) {
      probe_->OnCallFailed();
      MaybeProbe();
    }
    return known_bad;
  }

 private:
  // breaker.recoveryProbe: a health probe when one is due (RecoveryProbe
  // decides; asked when the breaker rejects and after a failure). The
  // answer comes on a gRPC thread and goes to the breaker from there.
  void MaybeProbe() {
    if (probe_ == nullptr || !probe_->StartIfDue()) return;
    RecoveryProbe* const probe = probe_;
    sender_->Check(std::string(), probe->options().health_service, probe->options().timeout,
                   [probe, tally = *tally_](RecoveryProbe::Answer answer) {
                     CountProbe(*tally, kMethodProbe, answer);
                     probe->OnAnswer(answer);
                   });
  }

  // ClientMethodTally::health_probes' first index.
  static constexpr size_t kMethodProbe = 0;
  static constexpr size_t kEndpointProbe = 1;
  static void CountProbe(ClientMethodTally& tally, size_t breaker, RecoveryProbe::Answer answer) {
    tally.health_probes[breaker][static_cast<size_t>(answer)].fetch_add(
        1, std::memory_order_relaxed);
  }

  Breaker* const breaker_;
  EndpointBreakers* const endpoints_;
  const MethodPolicy* const settings_;
  RecoveryProbe* const probe_;  // null: no probes
  HealthProbeSender* const sender_;
  ReconnectWatch* const reconnect_;
  // The state's (which the call keeps): the probes' callbacks copy it.
  const std::shared_ptr<ClientMethodTally>* const tally_;
  const MethodEnforcement* const enforcement_;
  // The call's criticality (ReadCriticality()).
  Criticality level_ = Criticality::kCritical;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_STAGE_H_
