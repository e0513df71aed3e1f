// File: experiments/goodput/suite.h
//
// The breaker-quality suite: every policy against every scenario family at
// several call rates and seeds (docs/breaker-quality.md).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SUITE_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SUITE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/goodput/goodput.h"

namespace goodput {

struct SuiteOptions {
  std::vector<std::string> families;  // empty: FamilyNames()
  std::vector<int> rates = {1000, 100, 10};
  std::vector<uint64_t> seeds = {1, 2, 3};
  absl::Duration length = absl::Seconds(300);
};

// One policy on one family at one rate, over all seeds: counts summed,
// goodput and waste from the sums (waste against `none` on the same
// fates), recoveries over every outage of every seed.
struct SuiteRow {
  std::string family;
  int calls_per_second = 0;
  std::string policy;
  Metrics metrics;
};

// RunSuite()
//
// `policies` must start with `none` (no breaker): it is the waste's
// baseline. InvalidArgument for an unknown family or a bad rate.
absl::StatusOr<std::vector<SuiteRow>> RunSuite(const SuiteOptions& options,
                                               const std::vector<Policy>& policies);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SUITE_H_
