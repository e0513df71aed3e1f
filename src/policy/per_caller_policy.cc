#include "src/policy/per_caller_policy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/enforcement_setting.h"
#include "src/policy/field_readers.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

constexpr size_t kMaxHeaderBytes = 64;

// A metadata key gRPC passes to the server as it is: lower case (gRPC
// lower-cases keys on the wire), not one of gRPC's own.
bool UsableHeader(absl::string_view header) {
  if (header.empty() || header.size() > kMaxHeaderBytes || absl::StartsWith(header, "grpc-")) {
    return false;
  }
  for (const char c : header) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.';
    if (!ok) return false;
  }
  return true;
}

// perCaller.key: a header's name or the peer, into settings.header.
absl::Status ReadCallerKey(const v1::PerCallerThrottle& p, absl::string_view path,
                           PerCallerSettings& settings) {
  const std::string key_path = absl::StrCat(path, ".key");
  if (!p.has_key() || (p.key().header().empty() && !p.key().peer())) {
    return absl::InvalidArgumentError(absl::StrCat(
        key_path, ": required: {\"header\": \"x-tenant-id\"} or {\"peer\": true}"));
  }
  if (!p.key().header().empty() && p.key().peer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_path, ": set header or peer, not both"));
  }
  if (!p.key().header().empty()) {
    if (!UsableHeader(p.key().header())) {
      return absl::InvalidArgumentError(absl::StrCat(
          key_path, ".header: must be 1 to 64 characters of [0-9a-z_.-], not starting with "
                    "\"grpc-\", got \"",
          internal::Printable(p.key().header(), 64), "\""));
    }
    settings.header = p.key().header();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PerCallerSettings> ReadPerCallerThrottle(const v1::PerCallerThrottle& p,
                                                        absl::string_view path) {
  PerCallerSettings settings;
  if (absl::Status s = ReadCallerKey(p, path, settings); !s.ok()) return s;
  if (!p.has_max_concurrency() && !p.has_rate_per_second() && !p.has_global()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": set maxConcurrency, ratePerSecond, global, or more than one"));
  }
  if (p.has_global()) {
    // The fleet's bucket of each key: throttle.global's fields and rules.
    absl::StatusOr<GlobalThrottleSettings> global =
        ReadGlobalThrottle(p.global(), absl::StrCat(path, ".global"));
    if (!global.ok()) return global.status();
    settings.global = *std::move(global);
    settings.limits.fleet = LimiterOptions(*settings.global);
  }
  absl::StatusOr<EnforcementMode> enforcement = ReadEnforcement(p.enforcement(), path);
  if (!enforcement.ok()) return enforcement.status();
  settings.enforcement = *enforcement;
  PerCallerLimits::Options& o = settings.limits;
  if (p.has_max_concurrency()) {
    if (p.max_concurrency() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".maxConcurrency: must be in [1, 1000000], got ", p.max_concurrency()));
    }
    o.max_concurrency = p.max_concurrency();
  }
  if (absl::Status s = ReadTokenRate(path, p.has_rate_per_second(), p.rate_per_second(),
                                     p.has_burst(), p.burst(), &o.rate_per_second, &o.burst);
      !s.ok()) {
    return s;
  }
  if (p.has_max_keys()) o.max_keys = p.max_keys();
  if (absl::Status s = PerCallerLimits::Validate(o); !s.ok()) {
    return absl::InvalidArgumentError(internal::SnakeToCamel(absl::StrCat(path, ".", s.message())));
  }
  return settings;
}

}  // namespace resilience
