// File: src/server_interceptors/throttle_stage.h
//
// The throttle stage of a server call (ServerCall): the method's `throttle`
// policy, a concurrency limit and a rate limit with what judges a call
// before them (deadline, CPU, per caller, criticality, retries).

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_STAGE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_STAGE_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/core/clock.h"
#include "src/breaker/outcome.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/enforced_limits.h"
#include "src/server_interceptors/server_method_state.h"

namespace resilience {

// ThrottleStage
//
// One per call, enabled for a method with a throttle (ServerCall runs it
// after the drain, before fault injection). Decides when the call's initial
// metadata arrives (POST_RECV_INITIAL_METADATA), before the handler runs, at
// the call's criticality (its resilience-criticality header within the
// method's ceiling, else the method's default: docs/criticality.md), each
// limit shedding the less critical first (ScopeLimits::shares,
// CriticalityShares):
//   - concurrency: a slot of the scope's ConcurrencyLimiter, fixed
//     (maxConcurrency) or adaptive (throttle.adaptive, which learns from the
//     outcome and latency of every admitted call when it is released; a call
//     answered, or closed without a status, past its deadline is a drop
//     (ReleaseExpired); a call its client cancelled teaches it nothing);
//   - rate: a token of the scope's TokenBucket;
//   - deadline (throttle.deadlineAdmission), asked before the others: a call
//     whose remaining deadline is below the method's service-time
//     percentile is refused, DEADLINE_EXCEEDED with the "do not retry"
//     pushback (AdmitByDeadline(), throttle_deadline.cc); the handler run
//     time of every admitted call not cancelled by its client is its
//     service time;
//   - per caller (throttle.perCaller), asked first: a slot and a token of
//     the bucket of the call's caller key (PerCallerLimits), the key being
//     a request header's value or the peer's identity
//     (docs/per-caller-limits.md); a refusal is counted and answered as the
//     concurrency or rate limit's, its message naming the key.
// Under throttle.retryShedding, a retried attempt (ReadRetry()) is judged by
// the scope's retry shares (RetryShedding) by every limit that takes shares
// (concurrency, rate, fleet-wide, per caller; the CPU gate judges by level
// only), and its rejections are counted as rejected_retry; with its
// doNotRetry, every rejection's pushback is "-1" (gRFC A6: do not retry).
//
// Each of these asks under its policy's enforcement mode, read once per call
// (ScopeLimits::enforcement): in shadow, a call it would reject is counted,
// logged and let through, and takes nothing from it; off, it is not asked
// (EnforcedLimits, throttle_shadow.cc, docs/shadow-mode-server.md).
// On a guarded callback-API method of a server whose only interceptors are
// ours, the call is decided before gRPC has made its interceptors
// (DecideOnArrival()): a rejected call then has none, and its guard
// answers it with the status and pushback described next.
// A rejected call is added to CallVerdicts, so that a GuardedService
// answers it without running the user's handler, and at PRE_SEND_STATUS its
// status becomes RESOURCE_EXHAUSTED with a message naming the method and the
// limit ("/cache.v1.CacheService/Get: concurrency limit 5 reached") and a
// `grpc-retry-pushback-ms` trailer: when capacity is expected, clamped to
// the policy's [minPushback, maxPushback]. For the concurrency limit that is
// how long the scope's calls take (CallDurationEstimate), for the rate limit
// the time until the next token.
//
// The slot of an admitted call is released when its status is sent
// (PRE_SEND_STATUS, before the status reaches the client, so a client that
// waits for each call never finds its own previous call still holding the
// slot), or, for a call that closes without a status (client cancellation,
// deadline), when the stage is destroyed: gRPC destroys server
// interceptors only after the handler has returned *and* the call has
// closed (the stage lives in the call's ServerCall), so a slot is never
// released while a handler still runs for it, and never twice.
//
// With throttle.loadReport (on by default), every unary answer it sends a
// status for, served or rejected, and every call rejected on arrival, of a
// call that asked for it (the request header resilience-orca, which our
// client's routed attempts carry), carries the scope's load (an ORCA report) in the `orca-load-bin`
// trailer (ScopeLoadReport(), AddLoadReport(); its rejections feed the
// report's rate).
//
// The call's counters (admitted, in flight, status, latency) are the
// ServerCall's ServerCallMeter's, not this stage's. Never calls
// ServerContext::IsCancelled() (it recurses in 1.51's sync server when
// called from an interceptor). Not thread-safe: gRPC serializes a call's
// hooks.
class ThrottleStage {
 public:
  using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

  // `state`: the method's state the call started with (null: no method
  // state); it must outlive the stage (the ServerCall holds it).
  ThrottleStage(grpc::experimental::ServerRpcInfo* info, ServerMethodState* state, Clock& clock,
                CallVerdicts& call_verdicts)
      : info_(info), state_(state), clock_(clock), call_verdicts_(call_verdicts) {}
  ThrottleStage(const ThrottleStage&) = delete;
  ThrottleStage& operator=(const ThrottleStage&) = delete;
  // What an admitted call that closed without a status holds goes back
  // (cancelled, or past its deadline); a rejection's verdict is forgotten.
  ~ThrottleStage();

  bool enabled() const { return state_ != nullptr && state_->limits != nullptr; }
  bool rejected() const { return rejected_; }

  // Decide()
  //
  // Reads the call's metadata and decides it (once; at once when it was
  // decided on arrival). Returns whether it admitted the call.
  bool Decide(const Metadata* received);

  // Closed()
  //
  // POST_RECV_CLOSE: the call closed; before a status, its client
  // cancelled it or its deadline passed.
  void Closed() {
    if (!status_sent_) closed_unanswered_ = true;
  }

  // SendRejection()
  //
  // PRE_SEND_STATUS of a rejected call: its status, pushback and load
  // report. Returns the status code sent.
  grpc::StatusCode SendRejection(grpc::experimental::InterceptorBatchMethods* methods);

  // SendStatus()
  //
  // PRE_SEND_STATUS of an admitted call answered `code` (after fault
  // injection's rewrite): gives back its slot, learning how it ended, and
  // adds the load report.
  void SendStatus(grpc::experimental::InterceptorBatchMethods* methods, grpc::StatusCode code);

  // DecideOnArrival()
  //
  // Admits or rejects the call before gRPC has made its interceptors, from
  // the client metadata its context already holds (gRPC 1.51 binds the
  // metadata, and on the callback API the core call, before it calls the
  // factories). Returns true when it rejected the call: the guard is then
  // to answer it (CallVerdicts::RejectOnArrival(), the rejection counted
  // here), and the call's ServerCall is to be destroyed unused. Otherwise
  // the admitted call's ServerCall is given to gRPC and its hooks do the
  // rest.
  bool DecideOnArrival();

 private:
  // The call's criticality from its resilience-criticality header and the
  // method's settings (an invalid header: the default, counted).
  void ReadCriticality(const Metadata* received);
  // Whether the call is a retried attempt (grpc-previous-rpc-attempts >= 1,
  // or without that header x-retry-attempt >= 1) of a scope that sheds
  // retries (ScopeLimits::retry_shedding).
  void ReadRetry(const Metadata* received);
  // A retried attempt judged by the retry shares: its rejections are
  // counted as rejected_retry and their messages say "retried".
  bool ShedAsRetry() const { return retry_; }
  // The shares the call is judged by: the retry shares for ShedAsRetry().
  const CriticalityShares& Shares() const {
    return state_->limits->retry_shedding.SharesFor(state_->limits->shares, retry_);
  }
  // The call's caller key (ScopeLimits::caller_header's value, or the
  // peer's identity) when the scope has per-caller limits.
  void ReadCallerKey(const Metadata* received);
  // Whether the call's answer carries the scope's load report (a unary call
  // of a scope with throttle.loadReport).
  // The call gets the scope's load report: it asked, and may have one.
  bool ReportsLoad() const { return load_asked_; }
  // Whether the call asked for the load report (ReportsLoad()).
  void ReadLoadRequest(const Metadata* received);
  void Admit();
  // Rejects the call with `message`, which must outlive the stage
  // (the method state's RejectionMessages, or owned_message_).
  void Reject(absl::string_view message, absl::Duration pushback);
  // The call's key's own limits (PerCallerLimits): false when they refused
  // it (then rejected).
  bool AdmitCaller();
  // throttle.cpu: false (and the call rejected) when the call is sheddable
  // and the process's CPU utilisation is over the gate's threshold.
  bool AdmitByCpu();
  // throttle.deadlineAdmission: false (and the call rejected) when the
  // call's remaining deadline is below the method's service-time
  // percentile and the refused share allows it (throttle_deadline.cc).
  bool AdmitByDeadline();
  // A rate limit (`cause`: "rate" or "global_rate") said no: counted, told
  // to the events listener, any concurrency slot given back, then Reject().
  void RejectByRate(absl::string_view cause, absl::string_view message,
                    absl::Duration retry_after);
  // A concurrency limit (the method's or the caller's) said no: counted,
  // told to the events listener, then Reject() with the scope's expected
  // call duration as the pushback.
  void RejectByConcurrency(absl::string_view message);
  // Shadow mode (throttle_shadow.cc, docs/shadow-mode-server.md).
  // A limit's decision: kShadowed is counted, logged and let through (then
  // Shadowed()); any other, nothing.
  void Shadow(const LimitDecision& decision, absl::string_view cause);
  // `policy` would reject the call for `cause`: true when `mode` is shadow
  // (counted, logged, and what the policies that do not enforce hold for
  // the call given back, as their rejection would have; the shadow
  // policies after it no longer judge it), false when it enforces.
  bool Shadowed(EnforcedPolicy policy, EnforcementMode mode, absl::string_view cause);
  // The cause of a per-caller refusal, as the metrics name it.
  static absl::string_view CallerCause(PerCallerLimits::Verdict verdict);
  // Tell the events listener when the scope starts rejecting (`cause`),
  // and when it admits a call after kThrottleQuietPeriod without rejecting.
  void NoteRejection(absl::string_view cause);
  void NoteAdmission();
  // Queues `event` for the listener on the server's events thread.
  void PostEvent(ThrottleEvent event);
  // How an admitted call ended, for the concurrency limiter and the
  // duration estimate: answered in time (kAnswered: a success, kFailed: a
  // failure for the outcome classifier); its deadline passed before it was
  // answered (kExpired: a drop, and its latency only a lower bound); closed
  // by its client before an answer (kCancelled: nothing learnt).
  enum class Ending { kAnswered, kFailed, kExpired, kCancelled };
  // Gives back what an admitted call holds.
  void Finish(Ending ending);
  // kExpired past the call's deadline, else kCancelled.
  Ending Unanswered() const;

  grpc::experimental::ServerRpcInfo* const info_;
  // The method's state the call started with (its ServerCall holds it).
  ServerMethodState* const state_;
  Clock& clock_;
  CallVerdicts& call_verdicts_;
  // When the call arrived, on the throttle's clock (monotonic): the start
  // of its latency for the limiter, the duration estimate and the metrics.
  absl::Time start_;
  // The enforcement modes the call is judged with (read at admission).
  EnforcementModes modes_;
  // The level the limits judge the call at (ReadCriticality()).
  Criticality level_ = Criticality::kCritical;
  // A retried attempt of a scope that sheds retries (ReadRetry()).
  bool retry_ = false;
  // The caller key: a view of the received header's value (used at
  // admission only, while the metadata is there), or `peer_key_`.
  absl::string_view caller_key_;
  std::string peer_key_;
  // The slot of an admitted call in its key's bucket.
  PerCallerLimits::Slot caller_slot_;
  bool holds_slot_ = false;   // a concurrency slot to release
  bool admitted_ = false;     // not finished yet
  bool decided_ = false;
  bool rejected_ = false;
  // Rejected on arrival: the guard answers and takes the verdict.
  bool answered_by_guard_ = false;
  bool status_sent_ = false;
  // POST_RECV_CLOSE came before PRE_SEND_STATUS.
  bool closed_unanswered_ = false;
  // A unary call of a reporting scope that asked for the load report.
  bool load_asked_ = false;
  // The handler ran to its end and answered (anything but CANCELLED, which
  // is how a handler stops early for a call it saw cancelled).
  bool handler_finished_ = false;
  // The rejection's status message: one of the method's RejectionMessages
  // (formatted once per method), or owned_message_ (an adaptive
  // concurrency limit's, which names the limit at the time).
  absl::string_view reject_message_;
  std::string owned_message_;
  std::string pushback_ms_;
  // The rejection's status code: RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED for
  // a deadline refusal.
  grpc::StatusCode reject_code_ = grpc::StatusCode::RESOURCE_EXHAUSTED;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_STAGE_H_
