#include "src/client_interceptors/call_handoff.h"

#include <utility>

namespace resilience::internal {
namespace {

thread_local TimeoutFlag* timeout_flag = nullptr;

}  // namespace

void HandOffTimeoutFlag(TimeoutFlag* flag) { timeout_flag = flag; }
TimeoutFlag* TakeTimeoutFlag() { return std::exchange(timeout_flag, nullptr); }

}  // namespace resilience::internal
