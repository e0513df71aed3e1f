#include "src/policy/deadline_admission_settings.h"

namespace resilience {

absl::StatusOr<DeadlineAdmission::Options> ReadDeadlineAdmission(const v1::DeadlineAdmission& p,
                                                                 const std::string& path) {
  DeadlineAdmission::Options o;
  if (p.has_percentile()) o.percentile = p.percentile();
  if (p.has_max_share()) o.max_share = p.max_share();
  if (p.has_min_samples()) o.min_samples = p.min_samples();
  if (p.has_window()) {
    // Beyond absl's range or with nanos of the other sign: not a window;
    // Validate() names it (absl saturates to an infinite duration).
    o.window = absl::Seconds(p.window().seconds()) + absl::Nanoseconds(p.window().nanos());
  }
  if (absl::Status s = DeadlineAdmission::Validate(o, path); !s.ok()) return s;
  return o;
}

}  // namespace resilience
