#include "grpc_resilience/internal/policy/global_throttle_policy.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/duration.pb.h"
#include "resilience/v1/policy.pb.h"
#include "grpc_resilience/internal/limits/global_rate_limiter.h"
#include "grpc_resilience/internal/limits/token_bucket.h"
#include "grpc_resilience/internal/policy/json_text.h"

namespace resilience {
namespace {

constexpr size_t kMaxKeyBytes = 256;
constexpr absl::Duration kMaxTimeout = absl::Seconds(10);

absl::Status Invalid(absl::string_view path, absl::string_view field, absl::string_view rule,
                     absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ".", field, ": must be ", rule, ", got ", value));
}

absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

bool PrintableAscii(absl::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// A host name or IPv4 address: letters, digits, '-', '.'.
bool HostName(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  }
  return true;
}

}  // namespace

GlobalRateLimiter::Options LimiterOptions(const GlobalThrottleSettings& g) {
  GlobalRateLimiter::Options o;
  o.rate_per_second = g.rate_per_second;
  o.burst = g.burst;
  o.expected_replicas = g.expected_replicas;
  o.lease_interval = g.lease_interval;
  o.lease_lifetime = std::max(o.lease_lifetime, o.lease_interval);
  return o;
}

std::string DefaultGlobalThrottleKey(absl::string_view scope) {
  return absl::StrCat("grpc_resilience:", scope.empty() ? "*" : scope);
}

absl::StatusOr<GlobalThrottleSettings> ReadGlobalThrottle(const v1::GlobalThrottlePolicy& p,
                                                          absl::string_view path) {
  GlobalThrottleSettings g;
  // redis: "host:port".
  const std::string shown = absl::StrCat("\"", internal::Printable(p.redis(), 64), "\"");
  if (p.redis().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".redis: required (\"host:port\" of the Redis server)"));
  }
  const size_t colon = p.redis().rfind(':');
  int port = 0;
  if (colon == std::string::npos || !HostName(absl::string_view(p.redis()).substr(0, colon)) ||
      !absl::SimpleAtoi(absl::string_view(p.redis()).substr(colon + 1), &port) || port < 1 ||
      port > 65535) {
    return Invalid(path, "redis", "\"host:port\" with a host name or IPv4 address and a port in [1, 65535]",
                   shown);
  }
  g.host = p.redis().substr(0, colon);
  g.port = port;
  if (!p.key().empty()) {
    if (p.key().size() > kMaxKeyBytes || !PrintableAscii(p.key())) {
      return Invalid(path, "key", "1 to 256 printable ASCII characters without spaces",
                     absl::StrCat("\"", internal::Printable(p.key(), 64), "\""));
    }
    g.key = p.key();
  }
  if (!p.has_rate_per_second()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".ratePerSecond: required (the fleet's calls per second)"));
  }
  if (!p.has_expected_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".expectedReplicas: required (how many servers share the limit: each admits "
              "its share of it while Redis is unreachable)"));
  }
  const double rate = p.rate_per_second();
  // The burst's default as throttle.burst's; the comparisons keep an invalid
  // rate (NaN included) out of the conversion.
  int64_t burst = 1;
  if (p.has_burst()) {
    burst = p.burst();
  } else if (rate >= TokenBucket::kMaxBurst) {
    burst = TokenBucket::kMaxBurst;
  } else if (rate >= 1.0) {
    burst = static_cast<int64_t>(rate);
  }
  g.rate_per_second = rate;
  g.burst = burst;
  g.expected_replicas = p.expected_replicas();
  if (p.has_lease_interval()) g.lease_interval = ToDuration(p.lease_interval());
  if (p.has_timeout()) {
    g.timeout = ToDuration(p.timeout());
    if (g.timeout < absl::Milliseconds(1) || g.timeout > kMaxTimeout) {
      return Invalid(path, "timeout", "in [1ms, 10s]", absl::FormatDuration(g.timeout));
    }
  }
  if (absl::Status s = GlobalRateLimiter::Validate(LimiterOptions(g)); !s.ok()) {
    // TokenBucket's messages name the fields in snake_case.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".", internal::SnakeToCamel(s.message())));
  }
  return g;
}

}  // namespace resilience
