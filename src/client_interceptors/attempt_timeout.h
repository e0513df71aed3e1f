// File: src/client_interceptors/attempt_timeout.h
//
// The timeout stage of a call that is its own one attempt (a stream, or a
// unary call that is not retried): gRPC 1.51 gives an interceptor no way to
// change a call's deadline, so a timer cancels the call when the policy's
// deadline passes.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_TIMEOUT_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_TIMEOUT_H_

#include <atomic>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "src/core/timeout_scheduler.h"

namespace resilience {

// AttemptTimeout
//
// Arm() schedules the timer on a TimeoutScheduler; when it fires before
// Disarm(), it sets fired() and cancels the call
// (ClientContext::TryCancel()), which then ends CANCELLED; the call object
// classifies that end as the deadline (ClassifyAttemptEnd()) and turns it
// into DEADLINE_EXCEEDED for the application. The server sees a
// cancellation rather than a deadline. Retried calls need none: each of
// their attempts is a call of its own with a real deadline.
//
// Lifetime: Disarm() (and the destructor) wait for a Fire() in progress
// (TimeoutScheduler::Cancel()), so Fire() never outlives the call's
// context.
class AttemptTimeout final : private TimeoutScheduler::Timer {
 public:
  explicit AttemptTimeout(TimeoutScheduler& scheduler) : scheduler_(scheduler) {}
  ~AttemptTimeout() override {
    if (armed_ || fired_.load()) scheduler_.Cancel(this);
  }

  // Arm()
  //
  // Cancels `context`'s call after `limit` from now; `per_attempt`: the
  // limit is the per-attempt timeout, not the call's `timeout`.
  void Arm(grpc::ClientContext* context, absl::Duration limit, bool per_attempt) {
    context_ = context;
    per_attempt_ = per_attempt;
    armed_ = true;
    scheduler_.Schedule(this, scheduler_.clock().Now() + limit);
  }

  // Disarm()
  //
  // No Fire() after it returns; fired() no longer changes.
  void Disarm() {
    if (!armed_) return;
    armed_ = false;
    scheduler_.Cancel(this);
  }

  bool fired() const { return fired_.load(); }
  bool per_attempt() const { return per_attempt_; }

 private:
  void Fire() override {
    fired_.store(true);
    // Runs PRE_SEND_CANCEL through the call's interceptors, then cancels
    // it; does not block.
    context_->TryCancel();
  }

  TimeoutScheduler& scheduler_;
  grpc::ClientContext* context_ = nullptr;
  std::atomic<bool> fired_{false};
  bool per_attempt_ = false;  // set before the timer is scheduled
  bool armed_ = false;        // only touched by the call's own hooks
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ATTEMPT_TIMEOUT_H_
