// File: experiments/fleet/fleet_svg.h
//
// The fleet report's charts, written as SVG by hand (no plotting package on
// this machine): goodput over time per configuration for one trigger, and
// recovered-or-not per offered load, trigger and configuration.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SVG_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SVG_H_

#include <string>
#include <vector>

#include "experiments/fleet/fleet_result.h"

namespace fleet {

// Success fraction per bin of every run of `trigger` at `load` (one line per
// configuration), the trigger's span shaded.
std::string GoodputSvg(const std::vector<RunResult>& runs, const std::string& trigger, double load);

// One panel per trigger: a row per configuration, a cell per load, green
// with the recovery time when it recovered, red "never" when it did not.
std::string BoundarySvg(const std::vector<RunResult>& runs);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SVG_H_
