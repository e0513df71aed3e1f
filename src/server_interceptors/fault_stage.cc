#include "src/server_interceptors/fault_stage.h"

#include <algorithm>
#include <chrono>

#include "src/core/clock.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "src/grpc_common/status_conversion.h"

namespace resilience {
namespace {

// How often a held call wakes to check its deadline and the end of holds.
constexpr absl::Duration kHoldSlice = absl::Milliseconds(20);

// Holds are timed by grpc::Alarm and the guard's sleeps, and compared with
// gRPC's deadlines: all on the real wall clock, whatever clock the throttle
// is given.
absl::Time RealWallNow() { return Clock::Real().WallNow(); }

}  // namespace

FaultStage::~FaultStage() {
  if (replace_status_ || held_by_guard_) call_verdicts_.Forget(info_->server_context());
}

void FaultStage::Reject(grpc::Status status) {
  replace_status_ = true;
  status_ = std::move(status);
  call_verdicts_.Reject(info_->server_context());
}

bool FaultStage::Aborts() {
  const FaultInjectionSettings& fault = *state_->fault;
  if (fault.abort_fraction <= 0 || state_->fault_random->NextUniform() >= fault.abort_fraction) {
    return false;
  }
  state_->faults_aborted.fetch_add(1, std::memory_order_relaxed);
  Reject(grpc::Status(static_cast<grpc::StatusCode>(fault.abort_code),
                      absl::StrCat(info_->method(), ": fault injected (",
                                   StatusCodeName(static_cast<grpc::StatusCode>(fault.abort_code)),
                                   ")")));
  return true;
}

bool FaultStage::Holds(grpc::experimental::InterceptorBatchMethods* methods) {
  const FaultInjectionSettings& fault = *state_->fault;
  if (fault.delay <= absl::ZeroDuration() || fault.delay_fraction <= 0 ||
      state_->fault_random->NextUniform() >= fault.delay_fraction) {
    return false;
  }
  state_->faults_delayed.fetch_add(1, std::memory_order_relaxed);
  grpc::ServerContextBase* context = info_->server_context();
  const bool callback_api = dynamic_cast<grpc::CallbackServerContext*>(context) != nullptr;
  if (state_->guarded && !callback_api) {
    // The guard holds the call on the thread gRPC gives its handler, where
    // it also sees a cancellation or a shutdown.
    held_by_guard_ = true;
    call_verdicts_.Hold(context, RealWallNow() + fault.delay, &state_->expired_while_delayed);
    return false;
  }
  hold_until_ = RealWallNow() + fault.delay;
  callback_api_ = callback_api;
  alarm_ = std::make_unique<grpc::Alarm>();
  Arm(methods);
  return true;
}

void FaultStage::Arm(grpc::experimental::InterceptorBatchMethods* methods) {
  // The alarm lives until the call ends, which cannot be before Proceed().
  // It wakes at least every kHoldSlice to see whether the call's deadline
  // passed or the holds must end (a server shutdown).
  const absl::Time next = std::min(hold_until_, RealWallNow() + kHoldSlice);
  alarm_->Set(absl::ToChronoTime(next), [this, methods](bool /*fired*/) { OnAlarm(methods); });
}

void FaultStage::OnAlarm(grpc::experimental::InterceptorBatchMethods* methods) {
  // Never IsCancelled() here (see ThrottleStage): a cancellation is
  // not seen before the hold is over.
  switch (call_verdicts_.EndOfHold(RealWallNow(), hold_until_,
                                   absl::FromChrono(info_->server_context()->deadline()))) {
    case HoldEnd::kHeld:
      Arm(methods);
      return;
    case HoldEnd::kDeadlinePassed:
      // The client gave up during the delay: don't let the handler work.
      state_->expired_while_delayed.fetch_add(1, std::memory_order_relaxed);
      Reject(grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          absl::StrCat(info_->method(), ": deadline passed during an injected delay")));
      break;
    case HoldEnd::kHoldsEnded:
      Reject(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat(info_->method(), ": server shutting down during an injected delay")));
      break;
    case HoldEnd::kElapsed:
    case HoldEnd::kCancelled:  // not asked
      break;
  }
  // The alarm's callback runs on gRPC's internal executor: fine for the
  // callback API, whose handler only creates a reactor; a sync handler must
  // not run there (see ProceedExecutor), so it is handed over.
  if (callback_api_) {
    methods->Proceed();
  } else {
    executor_.Run([methods] { methods->Proceed(); });
  }
}

std::optional<grpc::StatusCode> FaultStage::SendStatus(
    grpc::experimental::InterceptorBatchMethods* methods) {
  if (!replace_status_) return std::nullopt;
  methods->ModifySendStatus(status_);
  return status_.error_code();
}

}  // namespace resilience
