// ThrottleStage (throttle_stage.h): the decision, what an admitted call
// gives back, and the status it sends.

#include "src/server_interceptors/throttle_stage.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/grpc_common/metadata_keys.h"
#include "src/policy/outcome_classifier.h"
#include "src/server_interceptors/enforced_limits.h"
#include "src/server_interceptors/load_report_trailer.h"

namespace resilience {

void ThrottleStage::Reject(absl::string_view message, absl::Duration pushback) {
  const ScopeLimits& limits = *state_->limits;
  caller_slot_.Release();  // taken before another limit said no
  // Every rejection is counted by the criticality it was judged at.
  state_->rejected_by_criticality[CriticalityIndex(level_)].fetch_add(1, std::memory_order_relaxed);
  rejected_ = true;
  if (limits.load_report) state_->limits->rejection_rate.Add(start_);
  reject_message_ = message;
  pushback = std::clamp(pushback, limits.min_pushback, limits.max_pushback);
  pushback_ms_ = limits.retry_shedding.do_not_retry()
                     ? std::string(RetryShedding::kDoNotRetryPushback)
                     : absl::StrCat(absl::ToInt64Milliseconds(
                           absl::Ceil(pushback, absl::Milliseconds(1))));
  if (!answered_by_guard_) call_verdicts_.Reject(info_->server_context());
}

bool ThrottleStage::DecideOnArrival() {
  // Rejected here: no interceptor of ours will see the call, so the guard
  // answers it, and it is counted now.
  answered_by_guard_ = true;
  grpc::ServerContextBase* context = info_->server_context();
  Decide(&context->client_metadata());
  if (!rejected_) {
    answered_by_guard_ = false;
    return false;
  }
  if (state_->metrics) state_->meter.CountStatus(static_cast<int>(reject_code_));
  // Named by the core call: the guard's Deserialize() knows no other name.
  call_verdicts_.RejectOnArrival(
      context->c_call(), static_cast<int>(reject_code_),
      std::string(reject_message_), std::move(pushback_ms_),
      ReportsLoad() ? std::optional<std::string>(ScopeLoadReport(*state_->limits, start_))
                    : std::nullopt);
  return true;
}

bool ThrottleStage::Decide(const Metadata* received) {
  if (!decided_) {
    decided_ = true;
    ReadCriticality(received);
    ReadRetry(received);
    ReadCallerKey(received);
    ReadLoadRequest(received);
    Admit();
  }
  return admitted_;
}

void ThrottleStage::RejectByRate(absl::string_view cause, absl::string_view message,
                                       absl::Duration retry_after) {
  (ShedAsRetry() ? state_->rejected_retry : state_->rejected_rate)
      .fetch_add(1, std::memory_order_relaxed);
  NoteRejection(cause);
  // A concurrency slot taken before the bucket said no goes back unused.
  if (holds_slot_) {
    state_->limits->concurrency->ReleaseUnused();
    holds_slot_ = false;
  }
  Reject(message, retry_after);
}

void ThrottleStage::RejectByConcurrency(absl::string_view message) {
  (ShedAsRetry() ? state_->rejected_retry : state_->rejected_concurrency)
      .fetch_add(1, std::memory_order_relaxed);
  NoteRejection("concurrency");
  Reject(message, state_->limits->durations.Expected(start_));
}

void ThrottleStage::Admit() {
  start_ = clock_.Now();
  ScopeLimits& limits = *state_->limits;
  modes_ = limits.enforcement.Load();
  if (!limits.unusable.empty()) {
    state_->rejected_rate.fetch_add(1, std::memory_order_relaxed);
    Reject(state_->rejections.unusable(), limits.max_pushback);
    return;
  }
  // A call that cannot finish in time takes nothing from the limits.
  if (state_->deadline_admission != nullptr && !AdmitByDeadline()) return;
  // A busy process refuses sheddable calls before they cost more CPU.
  if (limits.cpu_threshold.has_value() && modes_.cpu != EnforcementMode::kOff && !AdmitByCpu()) {
    return;
  }
  // A caller over its own limits takes nothing from the method's.
  if (limits.per_caller != nullptr && modes_.per_caller != EnforcementMode::kOff &&
      !AdmitCaller()) {
    return;
  }
  // A retried attempt's shares under throttle.retryShedding, else the level's.
  const CriticalityShares& shares = Shares();
  const RejectionMessages& messages = ShedAsRetry() ? state_->retry_rejections : state_->rejections;
  if (limits.concurrency != nullptr) {
    const LimitDecision slot = EnforcedLimits::Slot(limits, shares, modes_, level_);
    if (slot.kind == LimitDecision::Kind::kRefused) {
      const int64_t limit = limits.concurrency->limit();
      const std::string* message = messages.concurrency(limit, level_);
      if (message == nullptr) {  // adaptive, or resized since the state was built
        owned_message_ = RejectionMessages::Concurrency(info_->method(), limits.adaptive, limit,
                                                        shares.ConcurrencyCap(limit, level_),
                                                        level_, ShedAsRetry());
        message = &owned_message_;
      }
      RejectByConcurrency(*message);
      return;
    }
    holds_slot_ = slot.kind == LimitDecision::Kind::kTaken;
    Shadow(slot, "concurrency");
  }
  if (limits.rate != nullptr) {
    const LimitDecision token = EnforcedLimits::Token(limits, shares, modes_, level_);
    if (token.kind == LimitDecision::Kind::kRefused) {
      RejectByRate("rate", messages.rate(level_), token.retry_after);
      return;
    }
    Shadow(token, "rate");
  }
  if (limits.global != nullptr) {
    const LimitDecision token = EnforcedLimits::Global(limits, shares, modes_, level_);
    if (token.kind == LimitDecision::Kind::kRefused) {
      RejectByRate("global_rate", messages.global_rate(level_), token.retry_after);
      return;
    }
    Shadow(token, "global_rate");
  }
  admitted_ = true;
  NoteAdmission();
  limits.durations.Started(start_);
}

void ThrottleStage::Finish(Ending ending) {
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
  // The handler ran to its end, late or not, or for a client that left
  // (one that left at its own deadline often reads as cancelled here: its
  // RST_STREAM comes before the server's copy of the deadline passes):
  // how long the method takes.
  if ((ending != Ending::kCancelled || handler_finished_) &&
      state_->deadline_admission != nullptr) {
    state_->deadline_admission->Record(latency);
  }
}

ThrottleStage::Ending ThrottleStage::Unanswered() const {
  // The client's deadline passed (a timeout), or the client went away. The
  // deadline is gRPC's, on the real wall clock, whatever clock the throttle
  // is given.
  return Clock::Real().WallNow() >= absl::FromChrono(info_->server_context()->deadline())
             ? Ending::kExpired
             : Ending::kCancelled;
}

grpc::StatusCode ThrottleStage::SendRejection(
    grpc::experimental::InterceptorBatchMethods* methods) {
  status_sent_ = true;
  methods->ModifySendStatus(grpc::Status(reject_code_, std::string(reject_message_)));
  methods->GetSendTrailingMetadata()->emplace(kPushbackKey, pushback_ms_);
  if (ReportsLoad()) {
    AddLoadReport(*methods->GetSendTrailingMetadata(), ScopeLoadReport(*state_->limits, start_));
  }
  return reject_code_;
}

void ThrottleStage::SendStatus(grpc::experimental::InterceptorBatchMethods* methods,
                               grpc::StatusCode code) {
  status_sent_ = true;
  static const OutcomeClassifier* const classifier = new OutcomeClassifier();
  // An answer sent past the call's deadline, or after the call closed,
  // reaches nobody: a timeout, or a cancellation, whatever its code.
  Ending ending = classifier->Classify(static_cast<absl::StatusCode>(code)) == Outcome::kFailure
                      ? Ending::kFailed
                      : Ending::kAnswered;
  // CANCELLED is what a handler answers to a call it saw cancelled; on
  // the callback API its reactor's OnCancel() runs before the
  // interceptors hear POST_RECV_CLOSE, so that answer comes first.
  if (admitted_) {
    handler_finished_ = code != grpc::StatusCode::CANCELLED;
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
}

ThrottleStage::~ThrottleStage() {
  if (rejected_ && !answered_by_guard_) call_verdicts_.Forget(info_->server_context());
  // Closed without a status: cancelled, or past its deadline.
  if (admitted_) Finish(Unanswered());
}

}  // namespace resilience
