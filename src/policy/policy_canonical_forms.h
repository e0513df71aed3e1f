// File: src/policy/policy_canonical_forms.h
//
// PolicyCanonicalForms(): an entry's settings in canonical forms, whole and
// by part (MethodPolicy::CanonicalForms), which tell a policy update what it
// may keep.

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_CANONICAL_FORMS_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_CANONICAL_FORMS_H_

#include "resilience/v1/policy.pb.h"
#include "src/policy/method_policy.h"

namespace resilience {

// PolicyCanonicalForms()
//
// `entry` without its names, serialized deterministically (equal for two
// entries that set the same fields to the same values), whole and by part.
// The parts leave out every `enforcement`: a client and a server switch it in
// place, keeping the breakers' and limits' state.
MethodPolicy::CanonicalForms PolicyCanonicalForms(const ::resilience::v1::MethodConfig& entry);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_CANONICAL_FORMS_H_
