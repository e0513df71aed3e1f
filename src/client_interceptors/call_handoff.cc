#include "src/client_interceptors/call_handoff.h"

namespace resilience::internal {
namespace {

thread_local bool creating_attempt = false;
thread_local std::shared_ptr<TimeoutFlag> timeout_flag;

}  // namespace

bool CreatingAttempt() { return creating_attempt; }
void SetCreatingAttempt(bool creating) { creating_attempt = creating; }

void HandOffTimeoutFlag(std::shared_ptr<TimeoutFlag> flag) { timeout_flag = std::move(flag); }
std::shared_ptr<TimeoutFlag> TakeTimeoutFlag() { return std::move(timeout_flag); }

}  // namespace resilience::internal
