#include "experiments/fleet/fleet_policy.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shipped_policies.h"
#include "src/policy/policy_table.h"

namespace fleet {
namespace {

using resilience::MethodPolicy;
using resilience::PolicyTable;

// The naive retry: the shipped Get's retryPolicy with 5 attempts.
constexpr char kNaive[] = R"json({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
  "timeout": "2s",
  "retryPolicy": {"maxAttempts": 5, "perAttemptTimeout": "0.2s", "initialBackoff": "0.02s",
    "maxBackoff": "0.2s", "backoffMultiplier": 2, "jitter": 0.2,
    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}]})json";

// gRPC's retryThrottling on top of it.
constexpr char kGrpcThrottled[] = R"json({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
  "timeout": "2s",
  "retryPolicy": {"maxAttempts": 5, "perAttemptTimeout": "0.2s", "initialBackoff": "0.02s",
    "maxBackoff": "0.2s", "backoffMultiplier": 2, "jitter": 0.2,
    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})json";

// naive with the widest budget the library's loader accepts.
constexpr char kNaiveBudget1000[] = R"json({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
  "timeout": "2s",
  "retryPolicy": {"maxAttempts": 5, "perAttemptTimeout": "0.2s", "initialBackoff": "0.02s",
    "maxBackoff": "0.2s", "backoffMultiplier": 2, "jitter": 0.2,
    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
  "retryBudget": {"maxTokens": 1000, "tokenRatio": 1}}]})json";

constexpr char kNoRetry[] = R"json({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService", "method": "Get"}], "timeout": "2s"}]})json";

constexpr char kAdaptiveServer[] = R"json({"methodConfig": [{
  "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
  "throttle": {"adaptive": {}}}]})json";

absl::StatusOr<const MethodPolicy*> Entry(const PolicyTable& table, const std::string& what) {
  const MethodPolicy* p = table.Find(kMethod).policy;
  if (p == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": no entry for ", kMethod));
  return p;
}

}  // namespace

absl::StatusOr<FleetPolicy> FromPolicyFiles(const std::string& name, const std::string& client_json,
                                            const std::string& server_json, bool strip_budget) {
  absl::StatusOr<PolicyTable> client = PolicyTable::FromJsonString(client_json);
  if (!client.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": client policy: ", client.status().message()));
  }
  absl::StatusOr<const MethodPolicy*> entry = Entry(*client, absl::StrCat(name, ": client policy"));
  if (!entry.ok()) return entry.status();
  const MethodPolicy& p = **entry;
  FleetPolicy out;
  out.name = name;
  if (p.timeout.has_value()) out.timeout = *p.timeout;
  // As ClientResilienceImpl builds a method's decider.
  if (p.retry.has_value()) {
    out.retry.max_attempts = p.retry->max_attempts;
    out.retry.retryable_codes = p.retry->retryable_status_codes;
    out.retry.backoff = p.retry->backoff();
    out.per_attempt_timeout = p.retry->per_attempt_timeout;
  }
  if (!strip_budget) {
    out.retry.budget = p.retry_budget;
    out.retry.windowed_budget = p.windowed_budget;
  }
  out.throttle = client->retry_throttling();
  out.breaker = p.breaker;
  out.client_json = client_json;
  out.server_json = server_json;
  out.budget_stripped = strip_budget;
  if (!server_json.empty()) {
    absl::StatusOr<PolicyTable> server = PolicyTable::FromJsonString(server_json);
    if (!server.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": server policy: ", server.status().message()));
    }
    absl::StatusOr<const MethodPolicy*> s = Entry(*server, absl::StrCat(name, ": server policy"));
    if (!s.ok()) return s.status();
    out.server_throttle = (*s)->throttle;
  }
  return out;
}

absl::StatusOr<std::vector<FleetPolicy>> StandardPolicies() {
  const std::string shipped = cache_service::kShippedPolicies;
  struct Spec {
    const char* name;
    std::string client;
    std::string server;
    bool strip_budget;
  };
  const Spec specs[] = {
      {"none", kNoRetry, "", false},
      {"naive", kNaive, "", true},
      {"grpc-throttled", kGrpcThrottled, "", false},
      {"recommended", shipped, "", false},
      {"recommended+pushback", shipped, shipped, false},
      {"recommended+adaptive", shipped, kAdaptiveServer, false},
  };
  std::vector<FleetPolicy> out;
  for (const Spec& s : specs) {
    absl::StatusOr<FleetPolicy> p = FromPolicyFiles(s.name, s.client, s.server, s.strip_budget);
    if (!p.ok()) return p.status();
    out.push_back(*std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<FleetPolicy>> DiagnosticPolicies() {
  const std::string shipped = cache_service::kShippedPolicies;
  std::vector<FleetPolicy> out;
  absl::StatusOr<FleetPolicy> no_breaker = FromPolicyFiles("recommended-no-breaker", shipped, "", false);
  if (!no_breaker.ok()) return no_breaker.status();
  no_breaker->breaker = resilience::BreakerSettings();
  no_breaker->client_json.clear();  // changed after loading: no file says this
  out.push_back(*std::move(no_breaker));
  // The shipped SRE breaker of Get with a 4 s window (same bucket width).
  const std::string window = R"("window": "10s", "buckets": 40)";
  const size_t at = shipped.find(window);
  if (at == std::string::npos) {
    return absl::InternalError(absl::StrCat("fleet policy: the shipped policies.json has no ", window));
  }
  std::string short_window = shipped;
  short_window.replace(at, window.size(), R"("window": "4s", "buckets": 16)");
  absl::StatusOr<FleetPolicy> w4 = FromPolicyFiles("recommended-window-4s", short_window, "", false);
  if (!w4.ok()) return w4.status();
  out.push_back(*std::move(w4));
  // The shipped entry with one breaker per client (the per-server breakers,
  // on by default, turned off).
  const std::string method_breaker_key = R"("callerDeadline": "NEUTRAL")";
  const size_t key_at = shipped.find(method_breaker_key);
  if (key_at == std::string::npos) {
    return absl::InternalError(
        absl::StrCat("fleet policy: the shipped policies.json has no ", method_breaker_key));
  }
  std::string method_breaker = shipped;
  method_breaker.insert(key_at + method_breaker_key.size(), R"(, "endpoints": {"enabled": false})");
  absl::StatusOr<FleetPolicy> mb =
      FromPolicyFiles("recommended-method-breaker", method_breaker, "", false);
  if (!mb.ok()) return mb.status();
  out.push_back(*std::move(mb));
  // The shipped file without Get's retryBudget line.
  const std::string budget_key = R"("retryBudget": {)";
  const size_t budget_at = shipped.find(budget_key);
  const size_t budget_end =
      budget_at == std::string::npos ? budget_at : shipped.find("},", budget_at);
  if (budget_end == std::string::npos) {
    return absl::InternalError(
        absl::StrCat("fleet policy: the shipped policies.json has no ", budget_key, "...},"));
  }
  std::string bucket_only = shipped;
  bucket_only.erase(budget_at, budget_end + 2 - budget_at);
  absl::StatusOr<FleetPolicy> bo = FromPolicyFiles("recommended-bucket-only", bucket_only, "", false);
  if (!bo.ok()) return bo.status();
  out.push_back(*std::move(bo));
  absl::StatusOr<FleetPolicy> nb = FromPolicyFiles("naive-budget-1000", kNaiveBudget1000, "", false);
  if (!nb.ok()) return nb.status();
  out.push_back(*std::move(nb));
  return out;
}

// The shipped policies.json with its retryThrottling's maxTokens replaced.
absl::StatusOr<FleetPolicy> WithMaxTokens(int max_tokens) {
  const std::string shipped = cache_service::kShippedPolicies;
  const std::string key = R"("retryThrottling": {"maxTokens": )";
  const size_t at = shipped.find(key);
  const size_t end = at == std::string::npos ? at : shipped.find(',', at + key.size());
  if (end == std::string::npos) {
    return absl::InternalError(absl::StrCat("fleet policy: the shipped policies.json has no ", key));
  }
  std::string file = shipped;
  file.replace(at + key.size(), end - at - key.size(), absl::StrCat(max_tokens));
  return FromPolicyFiles(absl::StrCat("recommended-tokens-", max_tokens), file, "", false);
}

absl::StatusOr<FleetPolicy> StandardPolicy(const std::string& name) {
  absl::string_view rest = name;
  int max_tokens = 0;
  if (absl::ConsumePrefix(&rest, "recommended-tokens-") && absl::SimpleAtoi(rest, &max_tokens)) {
    return WithMaxTokens(max_tokens);
  }
  absl::StatusOr<std::vector<FleetPolicy>> all = StandardPolicies();
  if (!all.ok()) return all.status();
  absl::StatusOr<std::vector<FleetPolicy>> more = DiagnosticPolicies();
  if (!more.ok()) return more.status();
  for (FleetPolicy& p : *more) all->push_back(std::move(p));
  for (FleetPolicy& p : *all) {
    if (p.name == name) return std::move(p);
  }
  return absl::NotFoundError(absl::StrCat("fleet policy: no configuration named \"", name, "\""));
}

}  // namespace fleet
