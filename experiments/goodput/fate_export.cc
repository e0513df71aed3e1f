#include "experiments/goodput/fate_export.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/goodput/scenarios.h"
#include "experiments/goodput/scheduled_backend.h"

namespace goodput {
namespace {

std::string ReferenceJson(const Metrics& m) {
  return absl::StrFormat(
      "{\"per_call\": \"%s\", \"succeeded\": %d, \"reached_failing_backend\": %d, "
      "\"goodput_ratio\": %.6f, \"first_success_seconds\": %.4f, \"recovery99_seconds\": %.4f, "
      "\"recovery99_max_seconds\": %.4f}",
      m.per_call, m.succeeded, m.reached_failing_backend, m.goodput_ratio,
      m.first_success_seconds, m.recovery99_seconds, m.recovery99_max_seconds);
}

}  // namespace

absl::Status ExportFates(const std::string& dir, const SuiteOptions& options) {
  std::vector<Policy> references;
  for (const Policy& p : StandardPolicies()) {
    if (p.key == "none" || p.key == "recommended") references.push_back(p);
  }
  const std::vector<std::string> families =
      options.families.empty() ? FamilyNames() : options.families;
  for (const std::string& family : families) {
    for (int rate : options.rates) {
      for (uint64_t seed : options.seeds) {
        absl::StatusOr<Scenario> s = MakeScenario(family, options.length, rate, seed);
        if (!s.ok()) return s.status();
        const int64_t spacing = 1000 / rate;
        const int64_t length_ms = absl::ToInt64Milliseconds(s->length);
        std::string fates, oracle;
        ScheduledBackend every_call(s->schedule, seed);
        ScheduledBackend fate_of(s->schedule, seed);
        for (int64_t tick = 0; tick < length_ms; tick += spacing) {
          oracle.push_back(every_call.Serve(tick) == absl::StatusCode::kOk ? '1' : '0');
          if (fate_of.PeriodAt(tick).kind == Period::kOverloaded) {
            fates.push_back('c');
          } else {
            fates.push_back(fate_of.Serve(tick) == absl::StatusCode::kOk ? 'o' : 'x');
          }
        }
        std::string json = absl::StrFormat(
            "{\"family\": \"%s\", \"calls_per_second\": %d, \"seed\": %d, \"length_ms\": %d, "
            "\"spacing_ms\": %d, \"failure_latency_ms\": %d, \"periods\": [",
            family, rate, seed, length_ms, spacing,
            absl::ToInt64Milliseconds(s->failure_latency));
        for (size_t i = 0; i < s->schedule.size(); ++i) {
          const Period& p = s->schedule[i];
          absl::StrAppendFormat(&json, "%s[%d, %d, %d, %d]", i ? ", " : "",
                                absl::ToInt64Milliseconds(p.start),
                                absl::ToInt64Milliseconds(p.end),
                                p.kind == Period::kHealthy ? 1 : 0, p.capacity_per_second);
        }
        absl::StrAppend(&json, "], \"fates\": \"", fates, "\", \"oracle\": \"", oracle,
                        "\", \"reference\": {");
        for (size_t i = 0; i < references.size(); ++i) {
          absl::StrAppend(&json, i ? ", " : "", "\"", references[i].key,
                          "\": ", ReferenceJson(RunScenario(*s, references[i], seed)));
        }
        json += "}}\n";
        const std::string path = absl::StrCat(dir, "/", family, "_", rate, "_", seed, ".json");
        std::ofstream file(path);
        file << json;
        if (!file.flush()) return absl::UnavailableError(absl::StrCat("cannot write ", path));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace goodput
