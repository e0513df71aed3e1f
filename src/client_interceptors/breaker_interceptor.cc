#include "src/client_interceptors/breaker_interceptor.h"

#include <chrono>

#include "absl/time/clock.h"
#include "src/client_interceptors/call_plan.h"
#include "src/client_interceptors/local_status.h"
#include "src/client_interceptors/metrics_interceptor.h"
#include "src/client_interceptors/retry_throttle_feed.h"

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

void MarkRejectedLocally(std::multimap<grpc::string_ref, grpc::string_ref>* trailers) {
  // string_refs into static storage: they outlive the call, and the value's
  // address is what RejectedLocally() checks.
  trailers->emplace(grpc::string_ref(kLocalRejectionKey, sizeof(kLocalRejectionKey) - 1),
                    grpc::string_ref(kLocalRejectionValue, sizeof(kLocalRejectionValue) - 1));
}

grpc::experimental::Interceptor* MakeBreakerInterceptor(ClientResilienceImpl& resilience,
                                                        grpc::experimental::ClientRpcInfo* info) {
  // Last factory of the chain: take what the timeout factory handed over,
  // always.
  internal::TimeoutFlag* const timeout_flag = internal::TakeTimeoutFlag();
  const CallPlan plan = PlanCall(resilience, info);
  if (plan.breaker) {
    // Without a timeout interceptor, this is the outermost of ours: it
    // meters the call.
    return new BreakerInterceptor(info, plan.state, resilience.clock(), timeout_flag,
                                  /*meters_call=*/!plan.timeout);
  }
  if (plan.metrics) return new MetricsInterceptor(info, plan.state);
  return nullptr;
}

LocalEnd BreakerInterceptor::EndOf(const grpc::Status& status) const {
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::CANCELLED) {
    // Our timeout interceptor's timer ended the call (a deadline), or the
    // caller cancelled.
    if (timeout_flag_ != nullptr && timeout_flag_->fired.load()) {
      return timeout_flag_->per_attempt.load() ? LocalEnd::kPerAttemptTimeout
                                               : LocalEnd::kCallDeadline;
    }
    return LocalEnd::kCancelledByCaller;
  }
  if (code != grpc::StatusCode::DEADLINE_EXCEEDED) return LocalEnd::kNone;
  const auto deadline = info_->client_context()->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return LocalEnd::kNone;
  const absl::Time at = absl::FromChrono(deadline);
  if (at <= real_start_) return LocalEnd::kDeadlineBeforeStart;
  // A server that answered DEADLINE_EXCEEDED well before our deadline
  // passed is just a server answer.
  if (absl::Now() < at - kDeadlineSlack) return LocalEnd::kNone;
  return LocalEnd::kCallDeadline;
}

void BreakerInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  bool hijack_now = false;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    started_ = true;
    if (meters_call_) meter_.BeginOneAttempt(*state_);
    admission_ = state_->breaker->Allow();
    real_start_ = absl::Now();
    if (!admission_.admitted()) {
      rejected_ = hijack_now = true;
      state_->rejected_by_breaker.fetch_add(1, std::memory_order_relaxed);
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
      *methods->GetRecvStatus() =
          BreakerRejectionStatus(info_->method(), state_->breaker->kind(), admission_.reason());
      MarkRejectedLocally(methods->GetRecvTrailingMetadata());
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
      const grpc::Status& status = *methods->GetRecvStatus();
      admission_.Record(
          state_->policy->breaker.Classify(static_cast<absl::StatusCode>(status.error_code()),
                                           EndOf(status)),
          end - admission_.start());
    }
  }
  if (meters_call_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
    meter_.End(*state_, static_cast<int>(methods->GetRecvStatus()->error_code()));
    FeedRetryThrottle(*state_, *info_->client_context(), methods);
    state_->reconnect->Poke(info_->channel(), methods->GetRecvStatus()->error_code());
  }
  if (hijack_now) {
    methods->Hijack();  // re-enters Intercept() with this batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

}  // namespace resilience
