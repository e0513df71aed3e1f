#include "src/policy/global_throttle_policy.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/duration.pb.h"
#include "resilience/v1/policy.pb.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/token_bucket.h"
#include "src/policy/field_readers.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

constexpr size_t kMaxKeyBytes = 256;
// A password file is a password: a few hundred bytes at most.
constexpr size_t kMaxPasswordBytes = 4096;
constexpr absl::Duration kMaxTimeout = absl::Seconds(10);

absl::Status Invalid(absl::string_view path, absl::string_view field, absl::string_view rule,
                     absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ".", field, ": must be ", rule, ", got ", value));
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

// An environment variable's name: [A-Za-z_][A-Za-z0-9_]*.
bool VariableName(absl::string_view s) {
  if (s.empty() || s.size() > 256 || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// The AUTH fields of `p` into `g`.
absl::Status ReadCredentials(const v1::GlobalThrottlePolicy& p, absl::string_view path,
                             GlobalThrottleSettings& g) {
  if (!p.password_env().empty() && !p.password_file().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".passwordEnv and ", path, ".passwordFile: set at most one (where the password is)"));
  }
  if (!p.password_env().empty() && !VariableName(p.password_env())) {
    return Invalid(path, "passwordEnv", "an environment variable's name ([A-Za-z_][A-Za-z0-9_]*)",
                   absl::StrCat("\"", internal::Printable(p.password_env(), 64), "\""));
  }
  if (!p.password_file().empty() &&
      (p.password_file().size() > 4096 || p.password_file().find('\0') != std::string::npos)) {
    return Invalid(path, "passwordFile", "a file's path",
                   absl::StrCat("\"", internal::Printable(p.password_file(), 64), "\""));
  }
  if (!p.username().empty() && (p.username().size() > kMaxKeyBytes || !PrintableAscii(p.username()))) {
    return Invalid(path, "username", "1 to 256 printable ASCII characters without spaces",
                   absl::StrCat("\"", internal::Printable(p.username(), 64), "\""));
  }
  if (!p.username().empty() && p.password_env().empty() && p.password_file().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".username: needs passwordEnv or passwordFile (where the user's password is)"));
  }
  g.password_env = p.password_env();
  g.password_file = p.password_file();
  g.username = p.username();
  // Read once now: a variable not set or a file not readable is an error of
  // the file, not a surprise at the first call.
  absl::StatusOr<std::string> password = ReadGlobalThrottlePassword(g);
  if (!password.ok()) return absl::InvalidArgumentError(password.status().message());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadGlobalThrottlePassword(const GlobalThrottleSettings& g) {
  if (!g.password_env.empty()) {
    const std::string where = absl::StrCat(g.path, ".passwordEnv: environment variable ",
                                           g.password_env);
    const char* value = std::getenv(g.password_env.c_str());
    if (value == nullptr) return absl::FailedPreconditionError(absl::StrCat(where, " is not set"));
    if (*value == '\0') return absl::FailedPreconditionError(absl::StrCat(where, " is empty"));
    return std::string(value);
  }
  if (!g.password_file.empty()) {
    const std::string where =
        absl::StrCat(g.path, ".passwordFile: \"", internal::Printable(g.password_file, 256), "\"");
    std::ifstream in(g.password_file, std::ios::binary);
    if (!in) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": cannot open: ", std::strerror(errno)));
    }
    std::string password(kMaxPasswordBytes + 1, '\0');
    in.read(password.data(), static_cast<std::streamsize>(password.size()));
    if (in.bad()) return absl::FailedPreconditionError(absl::StrCat(where, ": read error"));
    password.resize(static_cast<size_t>(in.gcount()));
    if (password.size() > kMaxPasswordBytes) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": over ", kMaxPasswordBytes, " bytes, not a password"));
    }
    // One trailing newline (as `echo` writes) is not part of it.
    if (absl::EndsWith(password, "\n")) password.pop_back();
    if (absl::EndsWith(password, "\r")) password.pop_back();
    if (password.empty()) return absl::FailedPreconditionError(absl::StrCat(where, ": empty"));
    return password;
  }
  return std::string();
}

std::string GlobalThrottlePasswordSource(const GlobalThrottleSettings& g) {
  if (!g.password_env.empty()) return absl::StrCat(g.path, ".passwordEnv (", g.password_env, ")");
  if (!g.password_file.empty()) {
    return absl::StrCat(g.path, ".passwordFile (\"", internal::Printable(g.password_file, 256),
                        "\")");
  }
  return "";
}

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

std::string PerCallerFleetPrefix(const GlobalThrottleSettings& g, absl::string_view scope) {
  return g.key.empty() ? absl::StrCat(DefaultGlobalThrottleKey(scope), ":caller") : g.key;
}

namespace {

// One Redis bucket, or a perCaller.global's family of them, as
// CheckGlobalThrottleKeys() compares them.
struct Bucket {
  std::string redis;  // host:port
  std::string under;  // what every key of it starts with: a perCaller.global's
                      // prefix and ":", else the key itself
  const GlobalThrottleScope* first;

  // As messages show it: a perCaller.global's is its prefix and ":*".
  std::string key() const { return first->per_caller ? absl::StrCat(under, "*") : under; }
};

// A perCaller.global `family` keeps a bucket per caller key, named its prefix,
// ':' and the key: any printable ASCII, ':' included. `other`, another bucket
// or family at the same Redis, shares one of them when its keys start with
// that prefix and ':' (e.g. "tenants:acme" is the caller "acme"'s bucket of
// "tenants", and every key of a family "tenants:eu" is one of "tenants"'s).
absl::Status CheckNotNested(const Bucket& family, const Bucket& other) {
  if (!family.first->per_caller || other.redis != family.redis ||
      !absl::StartsWith(other.under, family.under) || other.under == family.under) {
    return absl::OkStatus();
  }
  const std::string caller = absl::StrCat(other.under.substr(family.under.size()),
                                          other.first->per_caller ? "..." : "");
  return absl::InvalidArgumentError(absl::StrCat(
      other.first->settings->path, ": key \"", other.key(), "\" at ", other.redis, " lies under \"",
      family.under, "\", where ", family.first->settings->path,
      " keeps a bucket per caller key: its caller \"", caller,
      "\" would share this bucket; give the two keys that do not nest"));
}

}  // namespace

absl::Status CheckGlobalThrottleKeys(std::vector<GlobalThrottleScope> scopes) {
  std::sort(scopes.begin(), scopes.end(),
            [](const GlobalThrottleScope& a, const GlobalThrottleScope& b) {
              return std::tie(a.settings->path, a.scope) < std::tie(b.settings->path, b.scope);
            });
  std::vector<Bucket> buckets;  // a policy file has few: a linear search will do
  for (const GlobalThrottleScope& s : scopes) {
    const GlobalThrottleSettings& g = *s.settings;
    std::string under = g.key.empty() ? DefaultGlobalThrottleKey(s.scope) : g.key;
    if (s.per_caller) under = absl::StrCat(PerCallerFleetPrefix(g, s.scope), ":");
    Bucket b{absl::StrCat(g.host, ":", g.port), std::move(under), &s};
    auto same = std::find_if(buckets.begin(), buckets.end(), [&](const Bucket& o) {
      return o.redis == b.redis && o.key() == b.key();
    });
    if (same == buckets.end()) {
      buckets.push_back(std::move(b));
      continue;
    }
    const GlobalThrottleSettings& f = *same->first->settings;
    if (f.rate_per_second == g.rate_per_second && f.burst == g.burst) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        g.path, ": key \"", b.key(), "\" at ", b.redis, " is also the bucket of ", f.path,
        ", with ratePerSecond ", f.rate_per_second, " and burst ", f.burst,
        "; here ratePerSecond ", g.rate_per_second, " and burst ", g.burst,
        ": one key is one bucket, refilled by whichever server leases from it, so give both "
        "the same ratePerSecond and burst (one budget for both), or different keys"));
  }
  for (size_t later = 0; later < buckets.size(); ++later) {
    for (size_t earlier = 0; earlier < later; ++earlier) {
      if (absl::Status s = CheckNotNested(buckets[earlier], buckets[later]); !s.ok()) return s;
      if (absl::Status s = CheckNotNested(buckets[later], buckets[earlier]); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

namespace {

// global.redis: "host:port", into g.host and g.port.
absl::Status ReadRedis(const std::string& redis, absl::string_view path,
                       GlobalThrottleSettings& g) {
  // redis: "host:port".
  const std::string shown = absl::StrCat("\"", internal::Printable(redis, 64), "\"");
  if (redis.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".redis: required (\"host:port\" of the Redis server)"));
  }
  const size_t colon = redis.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !HostName(absl::string_view(redis).substr(0, colon)) ||
      !absl::SimpleAtoi(absl::string_view(redis).substr(colon + 1), &port) || port < 1 ||
      port > 65535) {
    return Invalid(path, "redis", "\"host:port\" with a host name or IPv4 address and a port in [1, 65535]",
                   shown);
  }
  g.host = redis.substr(0, colon);
  g.port = port;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GlobalThrottleSettings> ReadGlobalThrottle(const v1::GlobalThrottlePolicy& p,
                                                          absl::string_view path) {
  GlobalThrottleSettings g;
  g.path = std::string(path);
  if (absl::Status s = ReadRedis(p.redis(), path, g); !s.ok()) return s;
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
  if (absl::Status s = ReadDurations(path, {{"timeout", p.has_timeout(), p.timeout(),
                                             {absl::Milliseconds(1), false, kMaxTimeout},
                                             &g.timeout}});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadCredentials(p, path, g); !s.ok()) return s;
  if (absl::Status s = GlobalRateLimiter::Validate(LimiterOptions(g)); !s.ok()) {
    // TokenBucket's messages name the fields in snake_case.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".", internal::SnakeToCamel(s.message())));
  }
  return g;
}

}  // namespace resilience
