#include "experiments/goodput/suite.h"

#include "absl/strings/str_cat.h"
#include "experiments/goodput/scenarios.h"

namespace goodput {

absl::StatusOr<std::vector<SuiteRow>> RunSuite(const SuiteOptions& options,
                                               const std::vector<Policy>& policies) {
  if (policies.empty() || !policies[0].breaker_json.empty()) {
    return absl::InvalidArgumentError("RunSuite: the first policy must be `none`");
  }
  const std::vector<std::string> families =
      options.families.empty() ? FamilyNames() : options.families;
  std::vector<SuiteRow> rows;
  for (const std::string& family : families) {
    for (int rate : options.rates) {
      std::vector<SuiteRow> block(policies.size());
      for (size_t p = 0; p < policies.size(); ++p) {
        block[p].family = family;
        block[p].calls_per_second = rate;
        block[p].policy = policies[p].key;
      }
      for (uint64_t seed : options.seeds) {
        absl::StatusOr<Scenario> scenario = MakeScenario(family, options.length, rate, seed);
        if (!scenario.ok()) return scenario.status();
        for (size_t p = 0; p < policies.size(); ++p) {
          Metrics m = RunScenario(*scenario, policies[p], seed);
          m.successes_per_second.clear();
          m.per_call.clear();
          m.offered_per_second.clear();
          block[p].metrics.Merge(m);
        }
      }
      const double base = static_cast<double>(block[0].metrics.reached_failing_backend);
      for (SuiteRow& row : block) {
        row.metrics.waste_ratio = base > 0 ? row.metrics.reached_failing_backend / base : 0;
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

}  // namespace goodput
