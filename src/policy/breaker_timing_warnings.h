// File: src/policy/breaker_timing_warnings.h
//
// The loader's warnings about breaker timings that can never act given the
// rest of a methodConfig entry (kept out of policy_table_builder.cc, which calls it).

#ifndef GRPC_RESILIENCE_SRC_POLICY_BREAKER_TIMING_WARNINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_BREAKER_TIMING_WARNINGS_H_

#include <string>
#include <vector>

#include "src/policy/method_policy.h"
#include "resilience/v1/policy.pb.h"

namespace resilience {

// AppendBreakerTimingWarnings()
//
// `policy` is the entry at JSON path `path` ("methodConfig[0]") as loaded,
// `breaker` its breaker object as written. Appends a warning, starting with
// the setting's path, for each threeState setting that is set and can never
// act:
//   probeOverdue >= the longest an attempt can last (the earlier of
//     retryPolicy.perAttemptTimeout and timeout): every probe has a result,
//     its own or the timeout's, before it is overdue;
//   halfOpenMaxWait >= that limit: probes always report before it;
//   probeOverdue >= halfOpenMaxWait: the waiting probe re-opens the breaker
//     before it is overdue;
//   probeOverdue below probeInterval: it acts as probeInterval (an extra
//     probe is never closer than that to the last one).
void AppendBreakerTimingWarnings(const resilience::v1::BreakerPolicy& breaker,
                                 const MethodPolicy& policy, const std::string& path,
                                 std::vector<std::string>& warnings);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_BREAKER_TIMING_WARNINGS_H_
