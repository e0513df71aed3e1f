// File: src/policy/policy_set_access.h
//
// The library's own way into a public PolicySet: the PolicyTable it holds
// (Find(), policies(), names(), retry_throttling()), and a PolicySet made
// from a table loaded with internal options (tests' method catalogs).
//
//   const PolicyTable& table = PolicySetAccess::Table(policies);
//   const PolicyTable::Match match = table.Find("/cache.v1.CacheService/Get");

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_SET_ACCESS_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_SET_ACCESS_H_

#include "grpc_resilience/policy.h"
#include "src/policy/policy_table.h"

namespace resilience {

// PolicySetAccess
//
// Stateless. The table lives as long as any PolicySet that shares it.
class PolicySetAccess {
 public:
  static const PolicyTable& Table(const PolicySet& set) { return *set.table_; }
  static PolicySet Wrap(PolicyTable table);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_SET_ACCESS_H_
