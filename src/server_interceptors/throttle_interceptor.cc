#include "src/server_interceptors/throttle_interceptor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/security/auth_context.h"
#include "src/grpc_common/metadata_keys.h"
#include "src/policy/outcome_classifier.h"
#include "src/server_interceptors/enforced_limits.h"
#include "src/server_interceptors/load_report_trailer.h"
#include "src/server_interceptors/server_metrics_interceptor.h"

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The peer's key for throttle.perCaller: its authenticated identity (the
// first of its identity property's values), else its address without the
// port ("ipv4:10.0.0.7:52734" -> "ipv4:10.0.0.7"): the port changes with
// each connection, the caller does not.
std::string PeerKey(grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    const std::vector<grpc::string_ref> identity = auth->GetPeerIdentity();
    if (!identity.empty()) return std::string(identity.front().data(), identity.front().size());
  }
  std::string peer = context.peer();
  if (absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:")) {
    const size_t colon = peer.rfind(':');
    // After "ipv6:[...]" or the IPv4 address, never inside "ipvN:".
    if (colon != std::string::npos && colon > 5) peer.resize(colon);
  }
  return peer;
}

// What DecideOnArrival() decided for the call being set up on this thread,
// for the factories gRPC calls next for the same call (RejectedOnArrival(),
// MakeThrottleInterceptor()). Replaced by the first factory of each call.
struct Arrival {
  const ServerResilienceImpl* owner = nullptr;
  const grpc::experimental::ServerRpcInfo* info = nullptr;
  bool rejected = false;
  // Admitted on arrival: the call's interceptor, for the throttle's factory.
  std::unique_ptr<ThrottleInterceptor> admitted;
};
thread_local Arrival arrival;

}  // namespace

bool DecideOnArrival(ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info,
                     bool draining) {
  arrival = Arrival{};
  CallVerdicts::ArrivedUndecided();
  if (draining || !resilience.decide_on_arrival() || !resilience.any_throttle()) return false;
  grpc::ServerContextBase* context = info->server_context();
  // The callback API only: its guard runs for every call once the factories
  // are done (nothing else would take the verdict), and its context holds
  // the core call already (the peer, for a per-caller key).
  if (dynamic_cast<grpc::CallbackServerContext*>(context) == nullptr ||
      context->c_call() == nullptr) {
    return false;
  }
  // Kept for the other factories of ours: one generation for the call.
  std::shared_ptr<ServerMethodState> state = resilience.ForCall(info, /*keep_for_next=*/true);
  // Otherwise decided by the interceptor's hooks, as on the sync API.
  if (state == nullptr || state->limits == nullptr || !state->guarded) return false;
  auto throttle = std::make_unique<ThrottleInterceptor>(info, std::move(state), resilience.clock(),
                                                        resilience.call_verdicts());
  arrival.owner = &resilience;
  arrival.info = info;
  arrival.rejected = throttle->DecideOnArrival();
  if (!arrival.rejected) arrival.admitted = std::move(throttle);
  return arrival.rejected;
}

bool RejectedOnArrival(const ServerResilienceImpl& resilience,
                       const grpc::experimental::ServerRpcInfo* info) {
  return arrival.rejected && arrival.owner == &resilience && arrival.info == info;
}

grpc::experimental::Interceptor* MakeThrottleInterceptor(ServerResilienceImpl& resilience,
                                                         grpc::experimental::ServerRpcInfo* info) {
  if (arrival.owner == &resilience && arrival.info == info) {
    // Decided on arrival: rejected (no interceptor), or admitted.
    resilience.ForgetKeptLookup();
    Arrival decided = std::move(arrival);
    arrival = Arrival{};
    return decided.admitted.release();
  }
  if (!resilience.any_throttle() && !resilience.metrics()) {
    resilience.ForgetKeptLookup();
    return nullptr;
  }
  // What the fault injection factory found for this call, if it looked.
  std::shared_ptr<ServerMethodState> state = resilience.ForCall(info, /*keep_for_next=*/false);
  if (state == nullptr) return nullptr;
  if (state->limits != nullptr) {
    return new ThrottleInterceptor(info, state, resilience.clock(), resilience.call_verdicts());
  }
  // Neither throttle nor fault injection: only counted.
  if (state->metrics && state->fault == nullptr) return new ServerMetricsInterceptor(state);
  return nullptr;
}

void ThrottleInterceptor::Reject(absl::string_view message, absl::Duration pushback) {
  const ScopeLimits& limits = *state_->limits;
  caller_slot_.Release();  // taken before another limit said no
  // Every rejection is counted by the criticality it was judged at.
  state_->rejected_by_criticality[CriticalityIndex(level_)].fetch_add(1, std::memory_order_relaxed);
  rejected_ = true;
  if (limits.load_report) state_->limits->rejection_rate.Add(start_);
  reject_message_ = message;
  pushback = std::clamp(pushback, limits.min_pushback, limits.max_pushback);
  pushback_ms_ = absl::StrCat(absl::ToInt64Milliseconds(absl::Ceil(pushback, absl::Milliseconds(1))));
  if (!answered_by_guard_) call_verdicts_.Reject(info_->server_context());
}

bool ThrottleInterceptor::DecideOnArrival() {
  // Rejected here: no interceptor of ours will see the call, so the guard
  // answers it, and it is counted now.
  answered_by_guard_ = true;
  grpc::ServerContextBase* context = info_->server_context();
  Decide(&context->client_metadata());
  if (!rejected_) {
    answered_by_guard_ = false;
    return false;
  }
  if (state_->metrics) {
    state_->meter.CountStatus(static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  }
  call_verdicts_.RejectOnArrival(
      context, context->c_call(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED),
      std::string(reject_message_), std::move(pushback_ms_),
      ReportsLoad() ? std::optional<std::string>(ScopeLoadReport(*state_->limits, start_))
                    : std::nullopt);
  return true;
}

void ThrottleInterceptor::Decide(const Metadata* received) {
  if (decided_) return;
  decided_ = true;
  ReadCriticality(received);
  ReadCallerKey(received);
  Admit();
}

void ThrottleInterceptor::RejectByRate(absl::string_view cause, absl::string_view message,
                                       absl::Duration retry_after) {
  state_->rejected_rate.fetch_add(1, std::memory_order_relaxed);
  NoteRejection(cause);
  // A concurrency slot taken before the bucket said no goes back unused.
  if (holds_slot_) {
    state_->limits->concurrency->ReleaseUnused();
    holds_slot_ = false;
  }
  Reject(message, retry_after);
}

void ThrottleInterceptor::RejectByConcurrency(absl::string_view message) {
  state_->rejected_concurrency.fetch_add(1, std::memory_order_relaxed);
  NoteRejection("concurrency");
  Reject(message, state_->limits->durations.Expected(start_));
}

void ThrottleInterceptor::ReadCriticality(const Metadata* received) {
  std::optional<Criticality> claimed;
  if (received != nullptr) {
    const auto header = received->find(kCriticalityKey);
    if (header != received->end()) {
      if (!state_->criticality_seen.load(std::memory_order_relaxed)) {
        state_->criticality_seen.store(true, std::memory_order_relaxed);
      }
      // Compared in place against the four names; nothing is kept.
      claimed = ParseCriticality(absl::string_view(header->second.data(), header->second.size()));
      if (!claimed.has_value()) state_->criticality_invalid.fetch_add(1, std::memory_order_relaxed);
    }
  }
  level_ = state_->criticality.Resolve(claimed);
}

void ThrottleInterceptor::ReadCallerKey(const Metadata* received) {
  const ScopeLimits& limits = *state_->limits;
  if (limits.per_caller == nullptr) return;
  if (limits.caller_header.empty()) {
    peer_key_ = PeerKey(*info_->server_context());
    caller_key_ = peer_key_;
    return;
  }
  if (received == nullptr) return;
  const auto header = received->find(limits.caller_header);
  if (header != received->end()) {
    caller_key_ = absl::string_view(header->second.data(), header->second.size());
  }
}

bool ThrottleInterceptor::AdmitCaller() {
  ScopeLimits& limits = *state_->limits;
  PerCallerLimits::Admission admission =
      limits.per_caller->TryAcquire(caller_key_, EnforcedLimits::Shares(limits, modes_), level_);
  if (admission.verdict == PerCallerLimits::Verdict::kAdmitted) {
    caller_slot_ = std::move(admission.slot);
    return true;
  }
  if (Shadowed(EnforcedPolicy::kPerCaller, modes_.per_caller, CallerCause(admission.verdict))) {
    return true;
  }
  // The stored key: printable and bounded whatever the caller sent.
  const std::string who = admission.default_bucket
                              ? std::string(" for callers in the default bucket")
                              : absl::StrCat(" for caller \"", admission.key, "\"");
  const PerCallerLimits::Options& o = limits.per_caller->options();
  if (admission.verdict == PerCallerLimits::Verdict::kRate) {
    owned_message_ = absl::StrCat(info_->method(), ": per-caller rate limit ", o.rate_per_second,
                                  "/s reached", who,
                                  RejectionMessages::ForLevel(limits.shares, level_));
    RejectByRate("rate", owned_message_, admission.retry_after);
    return false;
  }
  if (admission.verdict == PerCallerLimits::Verdict::kFleetRate) {
    owned_message_ = absl::StrCat(info_->method(), ": per-caller fleet-wide rate limit ",
                                  o.fleet->rate_per_second, "/s reached", who,
                                  RejectionMessages::ForLevel(limits.shares, level_));
    RejectByRate("global_rate", owned_message_, admission.retry_after);
    return false;
  }
  owned_message_ =
      absl::StrCat(info_->method(), ": per-caller concurrency limit ", o.max_concurrency,
                   " reached", who,
                   admission.cap < o.max_concurrency
                       ? absl::StrCat(" for ", CriticalityName(level_), " calls (", admission.cap,
                                      " of ", o.max_concurrency, " slots)")
                       : "");
  RejectByConcurrency(owned_message_);
  return false;
}

bool ThrottleInterceptor::AdmitByCpu() {
  const ScopeLimits& limits = *state_->limits;
  // CRITICAL and CRITICAL_PLUS calls never read the meter.
  if (level_ != Criticality::kSheddable && level_ != Criticality::kSheddablePlus) return true;
  const double utilisation = limits.cpu_meter->Utilisation();
  if (!CpuUtilisationMeter::Sheds(utilisation, *limits.cpu_threshold, level_)) return true;
  if (Shadowed(EnforcedPolicy::kCpu, modes_.cpu, "cpu")) return true;
  state_->rejected_cpu.fetch_add(1, std::memory_order_relaxed);
  NoteRejection("cpu");
  owned_message_ = absl::StrCat(info_->method(), ": CPU utilisation ",
                                absl::StrFormat("%.2f", utilisation), " at or over the threshold ",
                                *limits.cpu_threshold, " for ", CriticalityName(level_), " calls");
  // The figure moves once a quarter window: come back after the next sample.
  Reject(owned_message_, limits.cpu_meter->window() / CpuUtilisationMeter::kSteps);
  return false;
}

void ThrottleInterceptor::Admit() {
  start_ = clock_.Now();
  ScopeLimits& limits = *state_->limits;
  modes_ = limits.enforcement.Load();
  if (!limits.unusable.empty()) {
    state_->rejected_rate.fetch_add(1, std::memory_order_relaxed);
    Reject(state_->rejections.unusable(), limits.max_pushback);
    return;
  }
  // A busy process refuses sheddable calls before they cost more CPU.
  if (limits.cpu_threshold.has_value() && modes_.cpu != EnforcementMode::kOff && !AdmitByCpu()) {
    return;
  }
  // A caller over its own limits takes nothing from the method's.
  if (limits.per_caller != nullptr && modes_.per_caller != EnforcementMode::kOff &&
      !AdmitCaller()) {
    return;
  }
  if (limits.concurrency != nullptr) {
    const LimitDecision slot = EnforcedLimits::Slot(limits, modes_, level_);
    if (slot.kind == LimitDecision::Kind::kRefused) {
      const int64_t limit = limits.concurrency->limit();
      const std::string* message = state_->rejections.concurrency(limit, level_);
      if (message == nullptr) {  // adaptive, or resized since the state was built
        owned_message_ = RejectionMessages::Concurrency(
            info_->method(), limits.adaptive, limit, limits.shares.ConcurrencyCap(limit, level_),
            level_);
        message = &owned_message_;
      }
      RejectByConcurrency(*message);
      return;
    }
    holds_slot_ = slot.kind == LimitDecision::Kind::kTaken;
    Shadow(slot, "concurrency");
  }
  if (limits.rate != nullptr) {
    const LimitDecision token = EnforcedLimits::Token(limits, modes_, level_);
    if (token.kind == LimitDecision::Kind::kRefused) {
      RejectByRate("rate", state_->rejections.rate(level_), token.retry_after);
      return;
    }
    Shadow(token, "rate");
  }
  if (limits.global != nullptr) {
    const LimitDecision token = EnforcedLimits::Global(limits, modes_, level_);
    if (token.kind == LimitDecision::Kind::kRefused) {
      RejectByRate("global_rate", state_->rejections.global_rate(level_), token.retry_after);
      return;
    }
    Shadow(token, "global_rate");
  }
  admitted_ = true;
  NoteAdmission();
  limits.durations.Started(start_);
  state_->admitted.fetch_add(1, std::memory_order_relaxed);
  state_->in_flight.fetch_add(1, std::memory_order_relaxed);
}

void ThrottleInterceptor::Finish(Ending ending) {
  if (!admitted_) return;
  admitted_ = false;
  const absl::Duration latency = clock_.Now() - start_;
  ScopeLimits& limits = *state_->limits;
  if (holds_slot_) {
    switch (ending) {
      case Ending::kAnswered:
        limits.concurrency->Release(Outcome::kSuccess, latency);
        break;
      case Ending::kFailed:
        limits.concurrency->Release(Outcome::kFailure, latency);
        break;
      case Ending::kExpired:
        limits.concurrency->ReleaseExpired(latency);
        break;
      case Ending::kCancelled:
        limits.concurrency->Release(Outcome::kNeutral, latency);
        break;
    }
  }
  holds_slot_ = false;
  caller_slot_.Release();
  // Only a call that was answered in time took as long as it measured.
  if (ending == Ending::kAnswered || ending == Ending::kFailed) limits.durations.Finished(latency);
  state_->in_flight.fetch_sub(1, std::memory_order_relaxed);
}

ThrottleInterceptor::Ending ThrottleInterceptor::Unanswered() const {
  // The client's deadline passed (a timeout), or the client went away. The
  // deadline is gRPC's, on the real wall clock, whatever clock the throttle
  // is given.
  return Clock::Real().WallNow() >= absl::FromChrono(info_->server_context()->deadline())
             ? Ending::kExpired
             : Ending::kCancelled;
}

void ThrottleInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    Decide(methods->GetRecvInitialMetadata());
  }
  // The call closed before its status was sent: its client cancelled it or
  // its deadline passed (IsCancelled() cannot be asked here, see above).
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_CLOSE) &&
      !status_sent_) {
    closed_unanswered_ = true;
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    status_sent_ = true;
    if (rejected_) {
      methods->ModifySendStatus(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(reject_message_)));
      methods->GetSendTrailingMetadata()->emplace(kPushbackKey, pushback_ms_);
      if (ReportsLoad()) {
        AddLoadReport(*methods->GetSendTrailingMetadata(), ScopeLoadReport(*state_->limits, start_));
      }
      if (state_->metrics) {
        state_->meter.CountStatus(static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
      }
    } else {
      static const OutcomeClassifier* const classifier = new OutcomeClassifier();
      const grpc::StatusCode code = methods->GetSendStatus().error_code();
      const bool was_admitted = admitted_;
      // An answer sent past the call's deadline, or after the call closed,
      // reaches nobody: a timeout, or a cancellation, whatever its code.
      Ending ending =
          classifier->Classify(static_cast<absl::StatusCode>(code)) == Outcome::kFailure
              ? Ending::kFailed
              : Ending::kAnswered;
      // CANCELLED is what a handler answers to a call it saw cancelled; on
      // the callback API its reactor's OnCancel() runs before the
      // interceptors hear POST_RECV_CLOSE, so that answer comes first.
      if (admitted_) {
        const Ending unanswered = Unanswered();
        if (unanswered == Ending::kExpired || closed_unanswered_ ||
            code == grpc::StatusCode::CANCELLED) {
          ending = unanswered;
        }
      }
      Finish(ending);
      // After Finish(): the slot this call held is free for the next one.
      if (ReportsLoad()) {
        AddLoadReport(*methods->GetSendTrailingMetadata(),
                      ScopeLoadReport(*state_->limits, clock_.Now()));
      }
      if (state_->metrics) {
        state_->meter.CountStatus(static_cast<int>(code));
        // With fault injection on the method, its interceptor times the
        // handler: it knows the calls it answered without one.
        if (was_admitted && state_->fault == nullptr) {
          state_->meter.ObserveLatency(clock_.Now() - start_);
        }
      }
    }
  }
  methods->Proceed();
}

ThrottleInterceptor::~ThrottleInterceptor() {
  if (rejected_ && !answered_by_guard_) call_verdicts_.Forget(info_->server_context());
  // Closed without a status: cancelled, or past its deadline.
  if (admitted_) Finish(Unanswered());
}

}  // namespace resilience
