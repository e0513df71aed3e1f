#include "src/client_interceptors/breaker_interceptor.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

// A deadline within this of start + per-attempt timeout was set by the
// per-attempt timeout (the retry interceptor sets it just before the call).
constexpr absl::Duration kDeadlineSlack = absl::Milliseconds(5);

}  // namespace

bool RejectedLocally(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  return trailers.find(grpc::string_ref(kLocalRejectionKey, sizeof(kLocalRejectionKey) - 1)) !=
         trailers.end();
}

grpc::experimental::Interceptor* BreakerInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  // Last factory of the chain: take what the others handed over, always.
  internal::TimeoutFlag* const timeout_flag = internal::TakeTimeoutFlag();
  const bool attempt = internal::CreatingAttempt();
  internal::SetCreatingAttempt(false);
  ClientMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr || state->breaker == nullptr) return nullptr;
  // A retried unary call: the breaker sees its attempts, not the call itself.
  if (info->type() == ClientRpcInfo::Type::UNARY && state->wraps_unary && !attempt) {
    return nullptr;
  }
  return new BreakerInterceptor(info, state, state_->clock(), timeout_flag);
}

Outcome BreakerInterceptor::Classify(const grpc::Status& status) const {
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::CANCELLED) {
    // Our per-attempt timeout fired (a failure), or the caller cancelled,
    // or the policy's default deadline ran out (both neutral).
    return timeout_flag_ != nullptr && timeout_flag_->fired.load() &&
                   timeout_flag_->per_attempt.load()
               ? Outcome::kFailure
               : Outcome::kNeutral;
  }
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    const std::optional<absl::Duration>& timeout = state_->policy->timeout;
    if (!timeout.has_value()) return Outcome::kNeutral;  // the caller's deadline
    const absl::Duration budget =
        absl::FromChrono(info_->client_context()->deadline()) - real_start_;
    return budget >= *timeout - kDeadlineSlack ? Outcome::kFailure : Outcome::kNeutral;
  }
  return state_->policy->breaker.classifier.Classify(static_cast<absl::StatusCode>(code));
}

void BreakerInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  bool hijack_now = false;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    state_->attempts.fetch_add(1, std::memory_order_relaxed);
    admission_ = state_->breaker->Allow();
    real_start_ = absl::Now();
    if (!admission_.admitted()) {
      rejected_ = hijack_now = true;
      state_->rejected_by_breaker.fetch_add(1, std::memory_order_relaxed);
      const BreakerSnapshot snapshot = state_->breaker->Snapshot();
      reject_message_ = absl::StrFormat(
          "%s: rejected locally by the circuit breaker (%s %s, %s, drop probability %.2f, "
          "failure rate %.2f over %d calls)",
          info_->method(), state_->breaker->kind(), BreakerStateName(snapshot.state),
          RejectReasonName(admission_.reason()), snapshot.drop_probability,
          snapshot.failure_rate, snapshot.counts.completed());
    }
  }
  if (rejected_) {
    // Before Hijack(), which clears this batch's hook points. Only streams
    // that send several messages fail their writes: for unary and
    // server-streaming calls the one message rides in the first batch, and
    // failing it would turn the async Finish tag's ok into false.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE) &&
        (info_->type() == ClientRpcInfo::Type::CLIENT_STREAMING ||
         info_->type() == ClientRpcInfo::Type::BIDI_STREAMING)) {
      methods->FailHijackedSendMessage();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_MESSAGE)) {
      methods->FailHijackedRecvMessage();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_RECV_STATUS)) {
      *methods->GetRecvStatus() = grpc::Status(grpc::StatusCode::UNAVAILABLE, reject_message_);
      // string_refs into static storage: they must outlive the call.
      static constexpr char kValue[] = "breaker";
      methods->GetRecvTrailingMetadata()->emplace(
          grpc::string_ref(kLocalRejectionKey, std::strlen(kLocalRejectionKey)),
          grpc::string_ref(kValue, sizeof(kValue) - 1));
    }
  } else if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    const grpc::Status& status = *methods->GetRecvStatus();
    admission_.Record(Classify(status), clock_.Now() - admission_.start());
  }
  if (hijack_now) {
    methods->Hijack();  // re-enters Intercept() with this batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

}  // namespace resilience
