// File: include/grpc_resilience/policy.h
//
// Per-method policies from one JSON file in gRPC service-config style:
//
//   #include "grpc_resilience/policy.h"
//
//   absl::StatusOr<resilience::PolicySet> policies =
//       resilience::PolicySet::FromJsonFile("policies.json");
//   if (!policies.ok()) { std::cerr << policies.status() << "\n"; return 2; }
//   for (const std::string& w : policies->warnings()) std::cerr << "warning: " << w << "\n";
//
// The fields and their bounds: docs/policy-reference.md and docs/bounds.md.

#ifndef GRPC_RESILIENCE_POLICY_H_
#define GRPC_RESILIENCE_POLICY_H_

#include "src/policy/method_catalog.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_set.h"

#endif  // GRPC_RESILIENCE_POLICY_H_
