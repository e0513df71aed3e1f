// File: experiments/goodput/experiment_flags.h
//
// The flags of goodput_experiment (defined in goodput_experiment_main.cc),
// for its modes in experiment_modes.cc.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_FLAGS_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

// The suite's rates, --rates' default.
inline constexpr char kSuiteRates[] = "1000,100,10";

ABSL_DECLARE_FLAG(double, seconds);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, json_file);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(bool, suite);
ABSL_DECLARE_FLAG(std::string, families);
ABSL_DECLARE_FLAG(std::string, rates);
ABSL_DECLARE_FLAG(int, seeds);
ABSL_DECLARE_FLAG(std::string, export_fates);
ABSL_DECLARE_FLAG(std::string, extra_policies);
ABSL_DECLARE_FLAG(bool, probe_bound);
ABSL_DECLARE_FLAG(std::string, recovery_probe);
ABSL_DECLARE_FLAG(std::string, mode);

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_FLAGS_H_
