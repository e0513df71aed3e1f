// File: src/policy/policy_table.h
//
// The per-method policies of one policy file, looked up by the method name
// gRPC gives a call ("/cache.v1.CacheService/Get"): the data behind the
// public resilience::PolicySet (include/grpc_resilience/policy.h), which
// the interceptors reach with PolicySetAccess::Table()
// (src/policy/policy_set_access.h). Tests load a PolicyTable directly to
// check names against a catalog of their own (LoadOptions::methods).
//
// Example:
//   absl::StatusOr<resilience::PolicyTable> policies =
//       resilience::PolicyTable::FromJsonFile("policies.json");
//   if (!policies.ok()) { std::cerr << policies.status().message(); return 2; }
//   resilience::PolicyTable::Match m = policies->Find("/cache.v1.CacheService/Get");
//   if (m.policy != nullptr && m.policy->retry) { ... }

#ifndef GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_H_
#define GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/policy/load_balancing_settings.h"
#include "src/policy/method_policy.h"

namespace resilience {

class MethodCatalog;  // src/policy/method_catalog.h, which includes this header

// How PolicyTable loads a file (PolicyTable::LoadOptions); the public
// PolicySet::LoadOptions is its `strict`.
struct PolicyLoadOptions {
  // Every warning becomes an error: loading fails with InvalidArgument
  // listing them all.
  bool strict = false;
  // The methods the names of the file are checked against (a name that can
  // match none of them is a warning, with the nearest name); null: the
  // methods linked into this process (MethodCatalog::Linked()).
  const MethodCatalog* methods = nullptr;
};

// PolicyTable
//
// Matching follows gRPC's service config: an exact {service, method} name
// beats a {service} name (all of its methods), which beats the {} default.
// A method named twice, or two defaults, is an error. Find() splits the name
// and does at most three hash lookups, with no allocation; callers on a hot
// path resolve once per method and keep the pointer, which stays valid for
// the PolicyTable's life (also across moves). Immutable once built; const
// methods are thread-safe.
class PolicyTable {
 public:
  using LoadOptions = PolicyLoadOptions;

  // One name of a methodConfig entry as the file wrote it: {} is service ""
  // and method "", {"service": S} is method "".
  struct Name {
    std::string service;
    std::string method;
    std::string path;  // "methodConfig[1].name[0]"
  };

  // Largest policy file accepted.
  static constexpr size_t kMaxFileBytes = size_t{4} << 20;

  // FromJsonString()
  //
  // Parses and validates a policy file's text. InvalidArgument naming the
  // JSON path and the bad value (e.g. "methodConfig[0].retryPolicy.maxAttempts:
  // must be in [1, 10], got 0"). The text must be strict JSON of the
  // schema's shape (e.g. "policy JSON: methodConfig[0]: expected an object,
  // got an array"), which protobuf's parser alone does not ensure. Every
  // bound is listed in docs/bounds.md; whatever loads, the runtime objects
  // built from it (breakers, token buckets, timers) accept. With
  // `options.strict`, any warning fails the load: "strict mode: N
  // warning(s): " and the warnings joined by "; ".
  static absl::StatusOr<PolicyTable> FromJsonString(absl::string_view json,
                                                  LoadOptions options = {});

  // FromJsonFile()
  //
  // Reads `path` and parses it; every error message starts with
  // `policy file "<path>": `. NotFound for a missing file, InvalidArgument for
  // an empty, oversized (> kMaxFileBytes) or invalid one.
  static absl::StatusOr<PolicyTable> FromJsonFile(const std::string& path,
                                                LoadOptions options = {});

  // An empty set: no method has a policy.
  PolicyTable() = default;

  struct Match {
    const MethodPolicy* policy = nullptr;
    // The name that matched, shared by every method it covers:
    // "svc/method", "svc/" (a whole service) or "" (the default).
    // Meaningless when policy is null.
    absl::string_view scope;
  };

  // Find()
  //
  // The policy of `full_method` ("/package.Service/Method"); policy is null
  // when no entry and no default covers it.
  Match Find(absl::string_view full_method) const;

  // ConfiguredMethods()
  //
  // Every method an entry names ("/svc/method" for {"service": "svc",
  // "method": "method"}), and every method of `catalog` in a service an
  // entry names whole ({"service": "svc"}); sorted, each once. Not the
  // methods only the default entry ({}) covers: they are every method there
  // is. The status page lists these before their first call.
  std::vector<std::string> ConfiguredMethods(const MethodCatalog& catalog) const;

  // The file's retryThrottling (gRFC A6: one per channel, every call on it
  // counts); none when the file has none.
  const std::optional<RetryBudgetSettings>& retry_throttling() const {
    return retry_throttling_;
  }
  // What gRPC's own retry of streams is throttled with
  // (builtin_retry_config.h): the file's retryThrottling, else
  // RetryBudget's defaults.
  RetryBudgetSettings stream_retry_throttling() const {
    return retry_throttling_.value_or(RetryBudgetSettings());
  }
  const std::vector<MethodPolicy>& policies() const { return policies_; }
  // Every name of every entry, in file order.
  const std::vector<Name>& names() const { return names_; }
  // loadBalancingPolicy, loadBalancingConfig and healthCheckConfig, checked
  // (LoadBalancingChecker); the channel's service config carries them
  // (ChannelServiceConfig).
  const LoadBalancingSettings& load_balancing() const { return load_balancing_; }

  // Settings the file wrote that are accepted but not applied, deprecated, or
  // without effect (e.g. a perAttemptTimeout not shorter than the timeout),
  // one line each, starting with its JSON path.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The warnings a server gives: warnings() but those about settings only a
  // client applies (by the JSON path each starts with: a methodConfig
  // entry's retryPolicy, hedgingPolicy, retryBudget, timeout, deadline,
  // waitForReady, breaker, bulkhead and message sizes; retryThrottling and
  // the load-balancing fields; healthCheckConfig stays: it names the
  // server's health service).
  std::vector<std::string> server_warnings() const;

 private:
  friend class PolicyTableBuilder;

  std::vector<MethodPolicy> policies_;
  // "svc/method" and "svc/" -> index into policies_. Node-based, so that the
  // keys handed out as Match::scope never move.
  absl::node_hash_map<std::string, size_t> by_name_;
  std::optional<size_t> default_index_;
  std::optional<RetryBudgetSettings> retry_throttling_;
  std::vector<std::string> warnings_;
  std::vector<Name> names_;
  LoadBalancingSettings load_balancing_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_POLICY_TABLE_H_
