/// \file include/grpc_resilience/policy.h
///
/// Per-method policies from one JSON file in gRPC service-config style:
///
/// \code
///   #include "grpc_resilience/policy.h"
///
///   absl::StatusOr<resilience::PolicySet> policies =
///       resilience::PolicySet::FromJsonFile("policies.json");
///   if (!policies.ok()) { std::cerr << policies.status() << "\n"; return 2; }
///   for (const std::string& w : policies->warnings()) std::cerr << "warning: " << w << "\n";
/// \endcode
///
/// The fields and their bounds: docs/policy-reference.md and docs/bounds.md.

#ifndef GRPC_RESILIENCE_POLICY_H_
#define GRPC_RESILIENCE_POLICY_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/export.h"

namespace resilience {

class PolicyTable;  // the parsed policies (internal)

/// How PolicySet loads a file (PolicySet::LoadOptions).
struct GRPC_RESILIENCE_EXPORT PolicySetLoadOptions {
  /// Every warning becomes an error: loading fails with InvalidArgument
  /// listing them all.
  bool strict = false;
};

/// PolicySet
///
/// The policies of one file, as the client (CreateResilientChannel) and the
/// server (AddServerInterceptors) take them. Matching follows gRPC's service
/// config: an exact {service, method} name beats a {service} name (all of its
/// methods), which beats the {} default. Immutable once loaded; copies and
/// moves share the loaded data (cheap; a moved-from set keeps its policies),
/// and const methods are thread-safe.
class GRPC_RESILIENCE_EXPORT PolicySet {
 public:
  /// How a file is loaded (strict or not).
  using LoadOptions = PolicySetLoadOptions;

  /// Largest policy file accepted.
  static constexpr size_t kMaxFileBytes = size_t{4} << 20;

  /// FromJsonString()
  ///
  /// Parses and validates a policy file's text. InvalidArgument naming the
  /// JSON path and the bad value (e.g. "methodConfig[0].retryPolicy.maxAttempts:
  /// must be in [1, 10], got 0"). The text must be strict JSON of the
  /// schema's shape (e.g. "policy JSON: methodConfig[0]: expected an object,
  /// got an array"). Every bound is listed in docs/bounds.md. Names of the
  /// file that match no method linked into the process are warnings (with the
  /// nearest linked name). With `options.strict`, any warning fails the load:
  /// "strict mode: N warning(s): " and the warnings joined by "; ".
  static absl::StatusOr<PolicySet> FromJsonString(absl::string_view json,
                                                  LoadOptions options = {});

  /// FromJsonFile()
  ///
  /// Reads `path` and parses it; every error message starts with
  /// `policy file "<path>": `. NotFound for a missing file, InvalidArgument for
  /// an empty, oversized (> kMaxFileBytes) or invalid one.
  static absl::StatusOr<PolicySet> FromJsonFile(const std::string& path,
                                                LoadOptions options = {});

  /// An empty set: no method has a policy.
  PolicySet();
  ~PolicySet();
  /// Copies and moves share the loaded data (cheap; a moved-from set keeps
  /// its policies).
  ///@{
  PolicySet(const PolicySet&);
  PolicySet& operator=(const PolicySet&);
  PolicySet(PolicySet&&) noexcept;
  PolicySet& operator=(PolicySet&&) noexcept;
  ///@}

  /// Settings the file wrote that are accepted but not applied (gRPC service
  /// config fields grpc-resilience does not implement), deprecated, or
  /// without effect (e.g. a perAttemptTimeout not shorter than the timeout),
  /// one line each, starting with its JSON path.
  const std::vector<std::string>& warnings() const;

 private:
  friend class PolicySetAccess;
  explicit PolicySet(std::shared_ptr<const PolicyTable> table);

  // Never null (an empty set shares one empty table).
  std::shared_ptr<const PolicyTable> table_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_POLICY_H_
