// File: src/policy/hedging_settings.h
//
// The loader's reading of a methodConfig entry's hedgingPolicy (kept out of
// policy_table_builder.cc, which calls it).

#ifndef GRPC_RESILIENCE_SRC_POLICY_HEDGING_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_HEDGING_SETTINGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/policy/method_policy.h"
#include "resilience/v1/policy.pb.h"

namespace resilience {

// ReadHedgingSettings()
//
// `p` at JSON path `path` ("methodConfig[0].hedgingPolicy") as settings the
// runtime takes as they are, or InvalidArgument naming the field and value:
//   maxAttempts: required, >= 2; above 5 clamped to 5 with a warning (gRPC);
//   hedgingDelay: [0, 1h], default 0;
//   nonFatalStatusCodes: status code names, not OK;
//   adaptiveDelay.percentile: [50, 99.9], default 95;
//   adaptiveDelay.floor: [0, 1h], default 1ms.
// Settings that are accepted but have no effect are appended to `warnings`,
// each starting with its path.
absl::StatusOr<HedgingSettings> ReadHedgingSettings(const resilience::v1::HedgingPolicy& p,
                                                    const std::string& path,
                                                    std::vector<std::string>& warnings);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_HEDGING_SETTINGS_H_
