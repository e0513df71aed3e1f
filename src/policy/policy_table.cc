#include "src/policy/policy_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/builtin_retry_config.h"
#include "src/policy/json_scanner.h"
#include "src/policy/json_to_proto.h"
#include "src/policy/json_text.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table_builder.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

using internal::FirstInvalidUtf8;
using internal::Position;

}  // namespace

absl::StatusOr<PolicyTable> PolicyTable::FromJsonString(absl::string_view json,
                                                    LoadOptions options) {
  // Editors on Windows start UTF-8 files with a byte-order mark; RFC 8259
  // lets a parser ignore it, and protobuf's would refuse the file without
  // saying where. Positions below are counted without it, as an editor
  // shows them.
  absl::ConsumePrefix(&json, "\xEF\xBB\xBF");
  if (absl::StripAsciiWhitespace(json).empty()) {
    return absl::InvalidArgumentError("policy JSON is empty (expected an object such as "
                                      "{\"methodConfig\": [...]})");
  }
  if (const size_t bad = FirstInvalidUtf8(json); bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy JSON: not valid UTF-8 at ", Position(json, bad), " (byte ", bad, ")"));
  }
  // The one parse: strict JSON into one tree; then the message from the
  // tree, each value's shape checked against the schema (both steps refuse
  // what protobuf's parser would quietly accept or reinterpret).
  absl::StatusOr<JsonValue> tree = JsonScanner(json).Parse();
  if (!tree.ok()) return tree.status();
  pb::PolicyFile file;
  if (absl::Status s = JsonToProto::Fill(*tree, file); !s.ok()) return s;
  absl::StatusOr<PolicyTable> set = PolicyTableBuilder().Build(file);
  if (!set.ok()) return set;
  // Names that match nothing linked, and retry settings gRPC's own retry
  // (which serves streams) cannot apply.
  const MethodCatalog& methods =
      options.methods != nullptr ? *options.methods : MethodCatalog::Linked();
  for (std::string& warning : UnlinkedNameWarnings(*set, methods)) {
    set->warnings_.push_back(std::move(warning));
  }
  if (std::optional<std::string> warning = HealthServiceNameWarning(*set, methods)) {
    set->warnings_.push_back(*std::move(warning));
  }
  const BuiltInRetryConfig builtin = BuiltInRetryConfig::Build(*set, methods);
  for (const std::string& warning : builtin.warnings()) set->warnings_.push_back(warning);
  if (options.strict && !set->warnings().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("strict mode: ", set->warnings().size(),
                                                   " warning(s): ",
                                                   absl::StrJoin(set->warnings(), "; ")));
  }
  return set;
}

absl::StatusOr<PolicyTable> PolicyTable::FromJsonFile(const std::string& path,
                                                  LoadOptions options) {
  const std::string where = absl::StrCat("policy file \"", path, "\": ");
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string reason = absl::StrCat(where, "cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(reason) : absl::InvalidArgumentError(reason);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(where, "not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, "is ", st.st_size,
                                                   " bytes, over the limit of ", kMaxFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "cannot open: ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(where, "read error"));
  absl::StatusOr<PolicyTable> set = FromJsonString(text.str(), options);
  if (!set.ok()) {
    return absl::Status(set.status().code(), absl::StrCat(where, set.status().message()));
  }
  return set;
}

PolicyTable::Match PolicyTable::Find(absl::string_view full_method) const {
  Match match;
  absl::string_view name = full_method;
  absl::ConsumePrefix(&name, "/");
  const size_t slash = name.rfind('/');
  if (slash != absl::string_view::npos && slash > 0) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {          // "svc/method"
      match.policy = &policies_[it->second];
      match.scope = it->first;
      return match;
    }
    if (auto it = by_name_.find(name.substr(0, slash + 1)); it != by_name_.end()) {  // "svc/"
      match.policy = &policies_[it->second];
      match.scope = it->first;
      return match;
    }
  }
  if (default_index_.has_value()) match.policy = &policies_[*default_index_];
  return match;
}

std::vector<std::string> PolicyTable::ConfiguredMethods(const MethodCatalog& catalog) const {
  std::vector<std::string> methods;
  for (const Name& name : names_) {
    if (name.service.empty()) continue;  // the default entry
    if (!name.method.empty()) {
      methods.push_back(absl::StrCat("/", name.service, "/", name.method));
      continue;
    }
    for (const MethodCatalog::Method& m : catalog.methods()) {
      if (m.service == name.service) methods.push_back(m.full_name());
    }
  }
  std::sort(methods.begin(), methods.end());
  methods.erase(std::unique(methods.begin(), methods.end()), methods.end());
  return methods;
}

std::vector<std::string> PolicyTable::server_warnings() const {
  // The fields only a client applies, by the JSON path a warning starts with.
  static constexpr absl::string_view kClientFields[] = {
      "retryPolicy", "hedgingPolicy", "retryBudget", "timeout", "deadline", "waitForReady",
      "breaker", "bulkhead", "fallback", "maxRequestMessageBytes", "maxResponseMessageBytes"};
  static constexpr absl::string_view kClientTopFields[] = {
      "retryThrottling", "loadBalancingConfig", "loadBalancingPolicy"};
  const auto client_only = [](absl::string_view warning) {
    const auto field_at = [&warning](size_t at) {
      const size_t end = warning.find_first_of(".:[ ", at);
      return warning.substr(at, end == absl::string_view::npos ? end : end - at);
    };
    if (absl::StartsWith(warning, "methodConfig[")) {
      const size_t close = warning.find("].");
      if (close == absl::string_view::npos) return false;
      const absl::string_view field = field_at(close + 2);
      return std::find(std::begin(kClientFields), std::end(kClientFields), field) !=
             std::end(kClientFields);
    }
    const absl::string_view field = field_at(0);
    return std::find(std::begin(kClientTopFields), std::end(kClientTopFields), field) !=
           std::end(kClientTopFields);
  };
  std::vector<std::string> warnings;
  for (const std::string& warning : warnings_) {
    if (!client_only(warning)) warnings.push_back(warning);
  }
  return warnings;
}

}  // namespace resilience
