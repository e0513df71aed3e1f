#include "src/server_interceptors/scope_enforcement.h"

namespace resilience {
namespace {

// The slot of each server policy in the packed word; -1: a client policy.
int Slot(EnforcedPolicy policy) {
  switch (policy) {
    case EnforcedPolicy::kThrottle:
      return 0;
    case EnforcedPolicy::kCriticalityShares:
      return 1;
    case EnforcedPolicy::kCpu:
      return 2;
    case EnforcedPolicy::kPerCaller:
      return 3;
    case EnforcedPolicy::kGlobal:
      return 4;
    case EnforcedPolicy::kBreaker:
    case EnforcedPolicy::kBulkhead:
      break;
  }
  return -1;
}

EnforcementMode* Field(EnforcementModes& modes, EnforcedPolicy policy) {
  switch (Slot(policy)) {
    case 0:
      return &modes.throttle;
    case 1:
      return &modes.shares;
    case 2:
      return &modes.cpu;
    case 3:
      return &modes.per_caller;
    case 4:
      return &modes.global;
    default:
      return nullptr;
  }
}

}  // namespace

bool EnforcementModes::AllEnforced() const {
  return throttle == EnforcementMode::kEnforce && shares == EnforcementMode::kEnforce &&
         cpu == EnforcementMode::kEnforce && per_caller == EnforcementMode::kEnforce &&
         global == EnforcementMode::kEnforce;
}

void EnforcementModes::AfterShadowRefusal() {
  for (EnforcementMode* mode : {&throttle, &shares, &cpu, &per_caller, &global}) {
    if (*mode == EnforcementMode::kShadow) *mode = EnforcementMode::kOff;
  }
}

EnforcementMode ModeOf(const EnforcementModes& modes, EnforcedPolicy policy) {
  EnforcementModes copy = modes;
  const EnforcementMode* mode = Field(copy, policy);
  return mode == nullptr ? EnforcementMode::kEnforce : *mode;
}

uint32_t ScopeEnforcement::Pack(const EnforcementModes& modes) {
  uint32_t packed = 0;
  for (EnforcedPolicy policy : kPolicies) {
    packed |= static_cast<uint32_t>(ModeOf(modes, policy)) << (2 * Slot(policy));
  }
  return packed;
}

EnforcementModes ScopeEnforcement::Load() const {
  const uint32_t packed = packed_.load(std::memory_order_relaxed);
  // The slots of Slot(), unpacked with shifts: this is on every call's path.
  auto at = [packed](int slot) {
    return static_cast<EnforcementMode>((packed >> (2 * slot)) & 3u);
  };
  EnforcementModes modes;
  modes.throttle = at(0);
  modes.shares = at(1);
  modes.cpu = at(2);
  modes.per_caller = at(3);
  modes.global = at(4);
  return modes;
}

EnforcementMode ScopeEnforcement::Get(EnforcedPolicy policy) const {
  return ModeOf(Load(), policy);
}

void ScopeEnforcement::Set(EnforcedPolicy policy, EnforcementMode mode) {
  const int slot = Slot(policy);
  if (slot < 0) return;
  uint32_t packed = packed_.load(std::memory_order_relaxed);
  uint32_t next;
  do {
    next = (packed & ~(3u << (2 * slot))) | (static_cast<uint32_t>(mode) << (2 * slot));
  } while (!packed_.compare_exchange_weak(packed, next, std::memory_order_relaxed));
}

void ScopeEnforcement::SetAll(const EnforcementModes& modes) {
  packed_.store(Pack(modes), std::memory_order_relaxed);
}

EnforcementModes ScopeEnforcement::Of(const ThrottleSettings& settings) {
  EnforcementModes modes;
  modes.throttle = settings.enforcement;
  modes.shares = settings.shares_enforcement;
  modes.cpu = settings.cpu_enforcement;
  if (settings.per_caller) modes.per_caller = settings.per_caller->enforcement;
  if (settings.global) modes.global = settings.global->enforcement;
  return modes;
}

}  // namespace resilience
