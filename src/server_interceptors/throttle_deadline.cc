// ThrottleStage::AdmitByDeadline() (throttle_stage.h):
// deadline-aware admission, throttle.deadlineAdmission (DeadlineAdmission).

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/server_interceptors/throttle_stage.h"

namespace resilience {
namespace {

// The time left to the call's deadline: gRPC's, on the real wall clock,
// whatever clock the throttle is given (as Unanswered()); a call without
// one has all the time in the world.
absl::Duration Remaining(const grpc::ServerContextBase& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteDuration();
  return absl::FromChrono(deadline) - Clock::Real().WallNow();
}

}  // namespace

bool ThrottleStage::AdmitByDeadline() {
  DeadlineAdmission& admission = *state_->deadline_admission;
  const absl::Duration remaining = Remaining(*info_->server_context());
  const DeadlineAdmission::Decision decision = admission.Decide(remaining, start_);
  if (!decision.refuse) return true;
  state_->rejected_deadline.fetch_add(1, std::memory_order_relaxed);
  owned_message_ = absl::StrCat(
      info_->method(), ": remaining deadline ",
      absl::FormatDuration(absl::Trunc(std::max(remaining, absl::ZeroDuration()),
                                       absl::Microseconds(100))),
      " is below the p", absl::StrFormat("%g", admission.options().percentile * 100),
      " service time ", absl::FormatDuration(absl::Trunc(*decision.service_time, absl::Microseconds(100))),
      " (deadline-aware admission)");
  Reject(owned_message_, absl::ZeroDuration());
  // A retry would have even less time: gRFC A6's "do not retry".
  reject_code_ = grpc::StatusCode::DEADLINE_EXCEEDED;
  pushback_ms_ = "-1";
  return false;
}

}  // namespace resilience
