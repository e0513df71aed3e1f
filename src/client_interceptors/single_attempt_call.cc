#include "src/client_interceptors/single_attempt_call.h"

#include <chrono>

#include "grpc/support/log.h"
#include "grpcpp/client_context.h"
#include "src/client_interceptors/attempt_end.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/retry_throttle_feed.h"

namespace resilience {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;

// The caller's deadline (wall clock), infinite when none.
absl::Time CallerDeadlineOf(const grpc::ClientContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

SingleAttemptCall::SingleAttemptCall(ClientRpcInfo* info, ClientMethodState& state,
                                     const CallPlan& plan, const CallEnvironment& env)
    : info_(info),
      state_(state),
      env_(env),
      has_timeout_(plan.timeout),
      unretried_stub_(plan.unretried_stub),
      counters_(state, *env.clock),
      breaker_(state),
      timeout_(*env.timeouts) {}

void SingleAttemptCall::Intercept(grpc::experimental::InterceptorBatchMethods* methods) {
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_CANCEL)) {
    cancelled_.store(true);
    return;  // no Proceed() for a cancel
  }
  bool hijack_now = false;
  if (!started_ &&
      methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
    Start(methods);
    hijack_now = rejected_;
  }
  if (rejected_) {
    FillRejection(methods);
  } else if (!first_response_.has_value() &&
             methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
             methods->GetRecvMessage() != nullptr) {
    first_response_ = env_.breaker_clock->Now();
  }
  if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) End(methods);
  if (hijack_now) {
    methods->Hijack();  // re-enters Intercept() with this batch's PRE_RECV_* hooks
    return;
  }
  methods->Proceed();
}

void SingleAttemptCall::Start(grpc::experimental::InterceptorBatchMethods* methods) {
  started_ = true;
  if (breaker_.enabled()) breaker_.ReadCriticality(*methods->GetSendInitialMetadata());
  // Metrics: the call and its one attempt.
  counters_.CallStarted();
  counters_.AttemptMade();
  if (unretried_stub_) {
    counters_.NotRetriedStub();
    if (!state_.reported_stub_pass_through.exchange(true)) {
      gpr_log(GPR_ERROR,
              "grpc-resilience: %s: a unary call that does not come from a protobuf generated "
              "stub (e.g. a GenericStub) is passed through without retries; its timeouts and "
              "breaker still apply",
              info_->method());
    }
  }
  sent_at_ = env_.clock->WallNow();
  // Timeout: the policy's `timeout` (the call's deadline, gRPC's meaning)
  // or, for a unary call, its one attempt's per-attempt timeout when that
  // is sooner. The caller's own earlier deadline needs nothing from us:
  // gRPC enforces it.
  if (has_timeout_) {
    limit_ = state_.policy->timeout.value_or(absl::InfiniteDuration());
    bool per_attempt = false;
    if (info_->type() == ClientRpcInfo::Type::UNARY &&
        state_.retry.per_attempt_timeout.value_or(absl::InfiniteDuration()) < limit_) {
      limit_ = *state_.retry.per_attempt_timeout;
      per_attempt = true;
    }
    if (sent_at_ + limit_ < CallerDeadlineOf(*info_->client_context())) {
      timeout_.Arm(info_->client_context(), limit_, per_attempt);
    }
  }
  // Breaker.
  if (breaker_.enabled()) {
    admission_ = breaker_.Admit(counters_);
    if (!admission_.admitted()) {
      rejected_ = true;
      counters_.RejectedByBreaker();
      timeout_.Disarm();
    }
  }
}

void SingleAttemptCall::FillRejection(grpc::experimental::InterceptorBatchMethods* methods) {
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
    *methods->GetRecvStatus() = breaker_.Rejection(info_->method(), admission_);
    MarkRejectedLocally(methods->GetRecvTrailingMetadata());
  }
}

void SingleAttemptCall::End(grpc::experimental::InterceptorBatchMethods* methods) {
  grpc::Status* status = methods->GetRecvStatus();
  if (!rejected_) {
    timeout_.Disarm();  // after this, fired() no longer changes
    AttemptEnd end;
    end.code = status->error_code();
    end.timer_fired = timeout_.fired();
    end.cancelled_here = cancelled_.load() && !end.timer_fired;
    end.per_attempt = end.timer_fired && timeout_.per_attempt();
    end.deadline = CallerDeadlineOf(*info_->client_context());
    end.sent_at = sent_at_;
    end.ended_at = env_.clock->WallNow();
    const LocalEnd local = ClassifyAttemptEnd(end);
    breaker_.Record(admission_, end.code, local,
                    first_response_.value_or(env_.breaker_clock->Now()),
                    breaker_.wants_endpoint()
                        ? BreakerStage::EndpointOf(info_->client_context()->peer())
                        : std::string());
    if (has_timeout_) {
      CallDeadlines deadlines;
      deadlines.method = info_->method();
      deadlines.call_limit = limit_;
      deadlines.attempt_limit = limit_;
      if (end.timer_fired && end.code == grpc::StatusCode::CANCELLED) {
        if (local == LocalEnd::kPerAttemptTimeout) counters_.AttemptTimedOut();
        deadlines.source = DeadlineSource::kPolicy;
        *status = OwnDeadlineStatus(deadlines, local, /*attempt=*/1, /*attempts=*/0);
      } else if (!end.timer_fired && DeadlinePassed(end, local)) {
        // gRPC's bare "Deadline Exceeded" for the caller's deadline.
        deadlines.source = DeadlineSource::kCaller;
        *status = OwnDeadlineStatus(deadlines, LocalEnd::kCallDeadline, 1, 0);
      }
    }
  }
  counters_.CallEnded(static_cast<int>(status->error_code()));
  FeedRetryThrottle(state_, *info_->client_context(), methods);
  state_.reconnect->Poke(info_->channel(), status->error_code());
  if (env_.events != nullptr && env_.events->pending()) {
    env_.DeliverEvents(internal::CallerBlocks(methods));
  }
}

}  // namespace resilience
