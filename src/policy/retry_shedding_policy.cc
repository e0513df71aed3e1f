#include "src/policy/retry_shedding_policy.h"

#include "absl/strings/str_cat.h"
#include "resilience/v1/policy.pb.h"

namespace resilience {

absl::Status ReadRetryShedding(const v1::ThrottlePolicy& p, const std::string& path,
                               ThrottleSettings& throttle) {
  if (!p.has_retry_shedding()) return absl::OkStatus();
  const v1::RetryShedding& r = p.retry_shedding();
  RetryShedding::Options options;
  if (r.has_retry_share()) options.retry_share = r.retry_share();
  if (r.has_do_not_retry()) options.do_not_retry = r.do_not_retry();
  if (!RetryShedding::Validate(options).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".retryShedding.retryShare: must be in [0, 1], got ", options.retry_share));
  }
  throttle.retry_shedding = options;
  return absl::OkStatus();
}

}  // namespace resilience
