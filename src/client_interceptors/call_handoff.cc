#include "grpc_resilience/internal/client_interceptors/call_handoff.h"

#include <utility>

namespace resilience::internal {
namespace {

thread_local const AttemptInfo* creating_attempt = nullptr;
thread_local TimeoutFlag* timeout_flag = nullptr;
thread_local bool retry_took_call = false;

}  // namespace

const AttemptInfo* CreatingAttempt() { return creating_attempt; }
void SetCreatingAttempt(const AttemptInfo* attempt) { creating_attempt = attempt; }

bool RetryTookCall() { return retry_took_call; }
void SetRetryTookCall(bool took) { retry_took_call = took; }

void HandOffTimeoutFlag(TimeoutFlag* flag) { timeout_flag = flag; }
TimeoutFlag* TakeTimeoutFlag() { return std::exchange(timeout_flag, nullptr); }

}  // namespace resilience::internal
