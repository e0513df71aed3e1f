#include "src/server_interceptors/throttle_interceptor.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/policy/outcome_classifier.h"
#include "src/server_interceptors/rejected_by_server_interceptor.h"

namespace resilience {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr char kPushbackKey[] = "grpc-retry-pushback-ms";

}  // namespace

grpc::experimental::Interceptor* ThrottleInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (!state_->any_throttle()) return nullptr;
  ServerMethodState* state = state_->ForMethod(info->method());
  if (state == nullptr || state->limits == nullptr) return nullptr;
  return new ThrottleInterceptor(info, state, state_->clock());
}

void ThrottleInterceptor::Admit(grpc::experimental::InterceptorBatchMethods* methods) {
  auto* metadata = methods->GetRecvInitialMetadata();
  internal::ClearRejectedMark(metadata);  // a client may not send the mark
  start_ = clock_.Now();
  ScopeLimits& limits = *state_->limits;
  if (limits.concurrency != nullptr) {
    if (!limits.concurrency->TryAcquire()) {
      rejected_ = true;
      state_->rejected_concurrency.fetch_add(1, std::memory_order_relaxed);
      reject_message_ = absl::StrCat(info_->method(), ": concurrency limit ",
                                     limits.concurrency->limit(), " reached");
      const int64_t us = limits.smoothed_latency_us.load(std::memory_order_relaxed);
      pushback_ms_ = absl::StrCat(std::max<int64_t>(1, (us + 999) / 1000));
    } else {
      holds_slot_ = true;
    }
  }
  if (!rejected_ && limits.rate != nullptr) {
    absl::Duration retry_after;
    if (!limits.rate->TryAcquire(&retry_after)) {
      rejected_ = true;
      state_->rejected_rate.fetch_add(1, std::memory_order_relaxed);
      reject_message_ = absl::StrCat(info_->method(), ": rate limit ",
                                     limits.rate->rate_per_second(), "/s reached");
      pushback_ms_ = absl::StrCat(
          std::max<int64_t>(1, static_cast<int64_t>(std::ceil(absl::ToDoubleMilliseconds(retry_after)))));
      if (holds_slot_) {
        limits.concurrency->Release(Outcome::kNeutral, absl::ZeroDuration());
        holds_slot_ = false;
      }
    }
  }
  if (rejected_) {
    internal::MarkRejected(metadata, "throttled");
    return;
  }
  admitted_ = true;
  state_->admitted.fetch_add(1, std::memory_order_relaxed);
  state_->in_flight.fetch_add(1, std::memory_order_relaxed);
}

void ThrottleInterceptor::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) return;
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
    Admit(methods);
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
    status_sent_ = true;
    if (rejected_) {
      methods->ModifySendStatus(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, reject_message_));
      methods->GetSendTrailingMetadata()->emplace(kPushbackKey, pushback_ms_);
    } else {
      static const OutcomeClassifier* const classifier = new OutcomeClassifier();
      failed_ = classifier->Classify(static_cast<absl::StatusCode>(
                    methods->GetSendStatus().error_code())) == Outcome::kFailure;
    }
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_CLOSE)) {
    closed_early_ = !status_sent_;  // cancelled or past its deadline
  }
  methods->Proceed();
}

ThrottleInterceptor::~ThrottleInterceptor() {
  if (!admitted_) return;
  const absl::Duration latency = clock_.Now() - start_;
  const Outcome outcome =
      closed_early_ ? Outcome::kNeutral : (failed_ ? Outcome::kFailure : Outcome::kSuccess);
  ScopeLimits& limits = *state_->limits;
  if (holds_slot_) limits.concurrency->Release(outcome, latency);
  // Exponential smoothing with weight 1/8; races lose an update, harmlessly.
  const int64_t sample = absl::ToInt64Microseconds(latency);
  const int64_t old = limits.smoothed_latency_us.load(std::memory_order_relaxed);
  limits.smoothed_latency_us.store(old == 0 ? sample : old + (sample - old) / 8,
                                   std::memory_order_relaxed);
  state_->in_flight.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace resilience
