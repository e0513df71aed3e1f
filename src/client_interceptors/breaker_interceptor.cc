#include "grpc_resilience/internal/client_interceptors/breaker_interceptor.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpc_resilience/internal/client_interceptors/metrics_interceptor.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

// The value of the kLocalRejectionKey trailer a rejection adds. Its address
// is the proof that the trailer was made here: trailers received from a
// server live in the call's own buffers, never in this array.
constexpr char kLocalRejectionValue[] = "breaker";

}  // namespace

bool RejectedLocally(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto [begin, end] =
      trailers.equal_range(grpc::string_ref(kLocalRejectionKey, sizeof(kLocalRejectionKey) - 1));
  for (auto it = begin; it != end; ++it) {
    if (it->second.data() == kLocalRejectionValue) return true;
  }
  return false;
}

grpc::experimental::Interceptor* BreakerInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  // Last factory of the chain: take what the others handed over, always.
  internal::TimeoutFlag* const timeout_flag = internal::TakeTimeoutFlag();
  const internal::AttemptInfo* const attempt = internal::CreatingAttempt();
  internal::SetCreatingAttempt(nullptr);
  const bool retry_took_call = internal::RetryTookCall();
  internal::SetRetryTookCall(false);
  ClientMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr) return nullptr;
  // A retried unary call: the breaker sees its attempts, not the call
  // itself, and the retry interceptor counts it.
  if (retry_took_call) return nullptr;
  // An application call with no timeout interceptor: counted here.
  const bool meters_call = attempt == nullptr && timeout_flag == nullptr;
  if (state->breaker != nullptr) {
    return new BreakerInterceptor(info, state, state_->clock(), timeout_flag,
                                  attempt != nullptr && attempt->per_attempt_deadline,
                                  meters_call);
  }
  if (meters_call && state->metrics) return new MetricsInterceptor(state);
  return nullptr;
}

Outcome BreakerInterceptor::DeadlineOutcome(bool per_attempt) const {
  if (!per_attempt && state_->policy->breaker.caller_deadline == CallerDeadline::kNeutral) {
    return Outcome::kNeutral;
  }
  return state_->policy->breaker.classifier.Classify(absl::StatusCode::kDeadlineExceeded);
}

Outcome BreakerInterceptor::Classify(const grpc::Status& status) const {
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::CANCELLED) {
    // Our timeout interceptor's timer ended the call (a deadline), or the
    // caller cancelled (neutral: it says nothing about the backend).
    if (timeout_flag_ != nullptr && timeout_flag_->fired.load()) {
      return DeadlineOutcome(timeout_flag_->per_attempt.load());
    }
    return Outcome::kNeutral;
  }
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    const auto deadline = info_->client_context()->deadline();
    if (deadline == std::chrono::system_clock::time_point::max()) {
      return state_->policy->breaker.classifier.Classify(absl::StatusCode::kDeadlineExceeded);
    }
    const absl::Time at = absl::FromChrono(deadline);
    // Already past when the call started: it never reached the backend.
    if (at <= real_start_) return Outcome::kNeutral;
    // A server that answered DEADLINE_EXCEEDED well before our deadline
    // passed is just a server answer.
    if (absl::Now() < at - kDeadlineSlack) {
      return state_->policy->breaker.classifier.Classify(absl::StatusCode::kDeadlineExceeded);
    }
    return DeadlineOutcome(per_attempt_deadline_);
  }
  return state_->policy->breaker.classifier.Classify(static_cast<absl::StatusCode>(code));
}

void BreakerInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  bool hijack_now = false;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    if (meters_call_) {
      state_->attempts.fetch_add(1, std::memory_order_relaxed);
      meter_.Begin(*state_);
    }
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
      // string_refs into static storage: they outlive the call, and the
      // value's address is what RejectedLocally() checks.
      methods->GetRecvTrailingMetadata()->emplace(
          grpc::string_ref(kLocalRejectionKey, std::strlen(kLocalRejectionKey)),
          grpc::string_ref(kLocalRejectionValue, sizeof(kLocalRejectionValue) - 1));
    }
  } else {
    if (!first_response_.has_value() &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr) {
      first_response_ = clock_.Now();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
      // The latency a slowCallThreshold judges: time to the first response
      // message (a stream's lifetime says nothing about the backend's
      // speed), or to the status when no message came.
      const absl::Time end = first_response_.value_or(clock_.Now());
      admission_.Record(Classify(*methods->GetRecvStatus()), end - admission_.start());
    }
  }
  if (meters_call_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    meter_.End(*state_, static_cast<int>(methods->GetRecvStatus()->error_code()));
  }
  if (hijack_now) {
    methods->Hijack();  // re-enters Intercept() with this batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

}  // namespace resilience
