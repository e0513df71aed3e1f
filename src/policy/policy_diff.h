// File: src/policy/policy_diff.h
//
// What an update of the policies changes, method by method: the part of
// ClientResilience::Update() and ServerResilience::Update() that does not
// depend on the side (each side says which part of a policy is its own).

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_DIFF_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_DIFF_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"

namespace resilience {

// The policy a side applies to `method` from `table`; null: none.
using SidePolicy = const MethodPolicy* (*)(const PolicyTable& table, absl::string_view method);
// The canonical form of the part of a policy a side applies
// (&MethodPolicy::CanonicalForms::client or ::server).
using SideForm = std::string MethodPolicy::CanonicalForms::*;

// PolicyDiff
//
// For `methods` (those resolved so far) and every full name either table
// names exactly: added (no policy before), removed (none after), changed
// (another canonical form of its side's part, `form`: a setting only the
// other side applies changes nothing here) or unchanged, as `policy_of`
// sees them; names without a policy on either side are left out. Names in
// order. The public PolicyUpdate carries these four fields.
struct PolicyDiff {
  static PolicyDiff Of(const PolicyTable& before, const PolicyTable& after,
                       std::set<std::string> methods, SidePolicy policy_of, SideForm form);

  std::vector<std::string> changed;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  int64_t unchanged = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_DIFF_H_
