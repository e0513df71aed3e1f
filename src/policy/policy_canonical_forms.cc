// File: src/policy/policy_canonical_forms.cc

#include "src/policy/policy_canonical_forms.h"

#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "src/policy/enforcement_setting.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

// `message` serialized deterministically (field order, no map order left
// to chance): equal for two messages that set the same fields to the same
// values.
std::string Deterministic(const pb::MethodConfig& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

// The throttle's `enforcement` fields cleared: a server applies them in
// place, its limits keeping their state (ServerResilience::Update()).
void ClearThrottleEnforcement(pb::MethodConfig& part) {
  if (!part.has_throttle()) return;
  pb::ThrottlePolicy& t = *part.mutable_throttle();
  t.clear_enforcement();
  if (t.has_criticality_shares()) t.mutable_criticality_shares()->clear_enforcement();
  if (t.has_cpu()) t.mutable_cpu()->clear_enforcement();
  if (t.has_global()) t.mutable_global()->clear_enforcement();
  if (t.has_per_caller()) t.mutable_per_caller()->clear_enforcement();
}

}  // namespace

MethodPolicy::CanonicalForms PolicyCanonicalForms(const pb::MethodConfig& entry) {
  MethodPolicy::CanonicalForms forms;
  pb::MethodConfig part = entry;
  part.clear_name();
  forms.whole = Deterministic(part);
  part.clear_throttle();
  part.clear_fault_injection();
  part.clear_criticality();
  forms.client = Deterministic(WithoutClientEnforcement(part));
  part.Clear();
  if (entry.has_throttle()) *part.mutable_throttle() = entry.throttle();
  if (entry.has_fault_injection()) *part.mutable_fault_injection() = entry.fault_injection();
  if (entry.has_criticality()) *part.mutable_criticality() = entry.criticality();
  ClearThrottleEnforcement(part);
  forms.server = Deterministic(part);
  part.Clear();
  if (entry.has_breaker()) *part.mutable_breaker() = entry.breaker();
  forms.breaker = Deterministic(WithoutClientEnforcement(part));
  part.Clear();
  if (entry.has_retry_policy()) *part.mutable_retry_policy() = entry.retry_policy();
  if (entry.has_hedging_policy()) *part.mutable_hedging_policy() = entry.hedging_policy();
  if (entry.has_retry_budget()) *part.mutable_retry_budget() = entry.retry_budget();
  if (entry.has_timeout()) *part.mutable_timeout() = entry.timeout();
  if (entry.has_deadline()) *part.mutable_deadline() = entry.deadline();
  forms.retry = Deterministic(part);
  part.Clear();
  if (entry.has_throttle()) *part.mutable_throttle() = entry.throttle();
  ClearThrottleEnforcement(part);
  forms.throttle = Deterministic(part);
  part.Clear();
  if (entry.has_fault_injection()) *part.mutable_fault_injection() = entry.fault_injection();
  forms.fault = Deterministic(part);
  return forms;
}

}  // namespace resilience
