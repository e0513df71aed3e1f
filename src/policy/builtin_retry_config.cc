#include "src/policy/builtin_retry_config.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

using internal::GrpcJsonDuration;
using internal::QuoteJson;
using internal::ShortestJsonNumber;

std::string JsonName(const std::string& service, const std::string& method) {
  if (service.empty()) return "{}";
  if (method.empty()) return absl::StrCat("{\"service\": ", QuoteJson(service), "}");
  return absl::StrCat("{\"service\": ", QuoteJson(service), ", \"method\": ",
                      QuoteJson(method), "}");
}

// The policy a name of the file belongs to: the one PolicyTable::Find gives
// the name's own scope, which is the name's entry (names are unique).
const MethodPolicy* PolicyOfName(const PolicyTable& policies, const PolicyTable::Name& name) {
  if (name.service.empty()) return policies.Find("").policy;
  return policies.Find(absl::StrCat("/", name.service, "/", name.method)).policy;
}

// The retryable codes gRPC is given: OK means nothing to retry.
std::vector<absl::StatusCode> RetryableCodes(const RetrySettings& retry) {
  std::vector<absl::StatusCode> codes;
  for (absl::StatusCode code : retry.retryable_status_codes) {
    if (code != absl::StatusCode::kOk &&
        std::find(codes.begin(), codes.end(), code) == codes.end()) {
      codes.push_back(code);
    }
  }
  return codes;
}

// Whether the policy retries at all (and so gRPC is to retry its streams).
bool Retries(const MethodPolicy* policy) {
  return policy != nullptr && policy->retry.has_value() && policy->retry->max_attempts > 1 &&
         !RetryableCodes(*policy->retry).empty();
}

std::string RetryPolicyJson(const RetrySettings& retry) {
  std::vector<std::string> codes;
  for (absl::StatusCode code : RetryableCodes(retry)) {
    codes.push_back(absl::StrCat("\"", absl::StatusCodeToString(code), "\""));
  }
  return absl::StrCat(
      "{\"maxAttempts\": ", std::min(retry.max_attempts, BuiltInRetryConfig::kMaxGrpcAttempts),
      ", \"initialBackoff\": ", GrpcJsonDuration(retry.initial_backoff),
      ", \"maxBackoff\": ", GrpcJsonDuration(retry.max_backoff),
      ", \"backoffMultiplier\": ", ShortestJsonNumber(retry.backoff_multiplier),
      ", \"retryableStatusCodes\": [", absl::StrJoin(codes, ", "), "]}");
}

// "/a.S/A, /a.S/B, /a.S/C and 2 more"
std::string ListStreams(const std::vector<std::string>& streams) {
  constexpr size_t kShown = 3;
  if (streams.size() <= kShown) return absl::StrJoin(streams, ", ");
  return absl::StrCat(absl::StrJoin(streams.begin(), streams.begin() + kShown, ", "), " and ",
                      streams.size() - kShown, " more");
}

// The methodConfig entries of one policy.
struct PolicyEntries {
  // Its streaming methods that gRPC retries: exact entries with retryPolicy.
  std::vector<const MethodCatalog::Method*> streams;
  // Its names that need an entry for waitForReady (its own, or none to
  // shadow a less specific name's).
  std::vector<const PolicyTable::Name*> names;
};

// Adds to `entries` the names that need an entry of gRPC's for their
// waitForReady. `given` is what gRPC's entries say so far, by key ("" the
// default, "svc/" a service, "svc/method"): the waitForReady of the entry,
// nullopt for an entry without it. Names go from least to most specific,
// so that each sees the entries that would otherwise match its methods.
// `exact_keys` are taken by stream entries, which carry their own.
void AddWaitForReadyNames(const PolicyTable& policies,
                          const absl::flat_hash_set<std::string>& exact_keys,
                          std::map<size_t, PolicyEntries>& entries) {
  absl::flat_hash_map<std::string, std::optional<bool>> given;
  std::vector<const PolicyTable::Name*> names;
  for (const PolicyTable::Name& name : policies.names()) names.push_back(&name);
  auto rank = [](const PolicyTable::Name* n) {
    return n->service.empty() ? 0 : n->method.empty() ? 1 : 2;
  };
  std::stable_sort(names.begin(), names.end(),
                   [&rank](const PolicyTable::Name* a, const PolicyTable::Name* b) {
                     return rank(a) < rank(b);
                   });
  for (const PolicyTable::Name* name : names) {
    const MethodPolicy* policy = PolicyOfName(policies, *name);
    if (policy == nullptr) continue;  // cannot happen: every name has its entry
    const std::string key =
        name->service.empty() ? "" : absl::StrCat(name->service, "/", name->method);
    if (exact_keys.contains(key)) continue;  // its stream entry carries it
    bool needed = policy->wait_for_ready.has_value();
    if (!needed) {
      // The entry gRPC would pick for this name's methods without one.
      std::optional<std::optional<bool>> otherwise;
      if (!name->method.empty()) {
        if (auto it = given.find(absl::StrCat(name->service, "/")); it != given.end()) {
          otherwise = it->second;
        }
      }
      if (!otherwise.has_value() && !name->service.empty()) {
        if (auto it = given.find(""); it != given.end()) otherwise = it->second;
      }
      needed = otherwise.has_value() && otherwise->has_value();
    }
    if (!needed) continue;
    given[key] = policy->wait_for_ready;
    entries[static_cast<size_t>(policy - policies.policies().data())].names.push_back(name);
  }
}

// The warnings of a policy whose streams (`streams`, listed) gRPC's
// built-in retry retries, for the settings gRPC applies otherwise.
void AppendStreamWarnings(const MethodPolicy& policy, const std::string& streams,
                          std::vector<std::string>& warnings) {
  constexpr int kMaxGrpcAttempts = BuiltInRetryConfig::kMaxGrpcAttempts;
  constexpr double kGrpcJitter = BuiltInRetryConfig::kGrpcJitter;
  const RetrySettings& retry = *policy.retry;
  const std::string path = absl::StrCat(policy.source, ".retryPolicy");
  if (retry.max_attempts > kMaxGrpcAttempts) {
    warnings.push_back(absl::StrCat(
        path, ".maxAttempts: ", retry.max_attempts, " is capped at ", kMaxGrpcAttempts,
        " (gRPC's limit) for the streams gRPC's built-in retry retries (", streams,
        "); unary calls keep ", retry.max_attempts));
  }
  if (retry.full_jitter) {
    warnings.push_back(absl::StrCat(
        path, ".fullJitter: gRPC's built-in retry, which retries the streams ", streams,
        ", backs off with its own jitter (", ShortestJsonNumber(kGrpcJitter),
        "); fullJitter applies to unary calls only"));
  } else if (retry.jitter != kGrpcJitter) {
    warnings.push_back(absl::StrCat(
        path, ".jitter: gRPC's built-in retry, which retries the streams ", streams,
        ", backs off with its own jitter (", ShortestJsonNumber(kGrpcJitter), "); ",
        ShortestJsonNumber(retry.jitter), " applies to unary calls only"));
  }
  if (retry.per_attempt_timeout.has_value()) {
    warnings.push_back(absl::StrCat(
        path, ".perAttemptTimeout: not applied to the streams gRPC's built-in retry "
              "retries (", streams, "); it applies to unary calls only"));
  }
}

// gRPC's methodConfig entries for one policy: its retried streams with the
// retryPolicy, its names that need their waitForReady.
void AppendEntryConfigs(const MethodPolicy& policy, const PolicyEntries& entry,
                        std::vector<std::string>& method_configs,
                        std::vector<std::string>& warnings) {
  const std::string wait_for_ready =
      policy.wait_for_ready.has_value()
          ? absl::StrCat(", \"waitForReady\": ", *policy.wait_for_ready ? "true" : "false")
          : "";
  if (!entry.streams.empty()) {
    std::vector<std::string> json_names, full_names;
    for (const MethodCatalog::Method* m : entry.streams) {
      json_names.push_back(JsonName(m->service, m->method));
      full_names.push_back(m->full_name());
    }
    method_configs.push_back(absl::StrCat("{\"name\": [", absl::StrJoin(json_names, ", "), "]",
                                          wait_for_ready, ", \"retryPolicy\": ",
                                          RetryPolicyJson(*policy.retry), "}"));
    AppendStreamWarnings(policy, ListStreams(full_names), warnings);
  }
  if (!entry.names.empty()) {
    std::vector<std::string> json_names;
    for (const PolicyTable::Name* n : entry.names) {
      json_names.push_back(JsonName(n->service, n->method));
    }
    method_configs.push_back(absl::StrCat("{\"name\": [", absl::StrJoin(json_names, ", "), "]",
                                          wait_for_ready, "}"));
  }
}

}  // namespace

BuiltInRetryConfig BuiltInRetryConfig::Build(const PolicyTable& policies,
                                             const MethodCatalog& catalog) {
  BuiltInRetryConfig config;
  const std::vector<MethodPolicy>& all = policies.policies();
  auto index_of = [&all](const MethodPolicy* p) { return static_cast<size_t>(p - all.data()); };
  std::map<size_t, PolicyEntries> entries;  // by policy index: file order

  // Streams gRPC retries. Their exact keys ("svc/method") are taken.
  absl::flat_hash_set<std::string> exact_keys;
  for (const MethodCatalog::Method& method : catalog.methods()) {
    if (!method.streaming()) continue;
    const MethodPolicy* policy = policies.Find(method.full_name()).policy;
    if (!Retries(policy)) continue;
    entries[index_of(policy)].streams.push_back(&method);
    exact_keys.insert(absl::StrCat(method.service, "/", method.method));
    config.retried_streams_.push_back(method.full_name());
  }

  AddWaitForReadyNames(policies, exact_keys, entries);

  // The JSON, and the warnings of each policy whose streams gRPC retries.
  std::vector<std::string> method_configs;
  for (const auto& [index, entry] : entries) {
    AppendEntryConfigs(all[index], entry, method_configs, config.warnings_);
  }

  if (method_configs.empty()) return config;
  config.members_ = absl::StrCat("\"methodConfig\": [", absl::StrJoin(method_configs, ", "), "]");
  if (!config.retried_streams_.empty()) {
    const RetryBudgetSettings budget = policies.stream_retry_throttling();
    absl::StrAppend(&config.members_, ", \"retryThrottling\": {\"maxTokens\": ", budget.max_tokens,
                    ", \"tokenRatio\": ",
                    ShortestJsonNumber(std::max(budget.token_ratio, kMinGrpcTokenRatio)), "}");
  }
  config.service_config_ = absl::StrCat("{", config.members_, "}");
  std::sort(config.retried_streams_.begin(), config.retried_streams_.end());
  return config;
}

}  // namespace resilience
