#include "src/policy/load_balancing_checker.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"
#include "src/policy/json_text.h"
#include "src/policy/struct_checks.h"

namespace resilience {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using internal::Bad;
using internal::Describe;
using internal::Duration;
using internal::Integer;
using internal::OnlyFields;
using internal::Printable;
using internal::QuoteJson;
using internal::ToJson;

// The policies a policy file may name, and those gRPC 1.51 registers only
// for xDS to build.
constexpr absl::string_view kPolicies[] = {"pick_first", "round_robin",
                                           "outlier_detection_experimental", "grpclb"};
constexpr absl::string_view kXdsPolicies[] = {
    "priority_experimental",          "weighted_target_experimental",
    "rls_experimental",               "cds_experimental",
    "xds_cluster_impl_experimental",  "xds_cluster_manager_experimental",
    "xds_cluster_resolver_experimental", "xds_wrr_locality_experimental",
    "ring_hash_experimental"};
constexpr uint64_t kMaxUint32 = 4294967295u;
// Longest ejection time or interval written (gRPC takes more; a longer one
// is a typo): an hour for the interval, a day for ejections.
constexpr int64_t kMaxIntervalSeconds = 3600;
constexpr int64_t kMaxEjectionSeconds = 86400;

// The library's own picker, loadBalancingConfig's first entry.
constexpr absl::string_view kOwnPicker = "resilience_p2c";

absl::Status CheckOwnPicker(const Struct& entry, LoadBalancingSettings::Routing& routing) {
  const std::string path = absl::StrCat("loadBalancingConfig[0].", kOwnPicker);
  const Value& config = entry.fields().begin()->second;
  if (config.kind_case() != Value::kStructValue) {
    return Bad(path, absl::StrCat("must be an object, got ", Describe(config)));
  }
  const Struct& c = config.struct_value();
  for (absl::Status s : {OnlyFields(c, path, kOwnPicker, {"slowStart", "reresolveInterval"}),
                         Duration(c, path, "slowStart", 600, &routing.slow_start),
                         Duration(c, path, "reresolveInterval", kMaxIntervalSeconds,
                                  &routing.reresolve_interval)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// What the walk learns about the list gRPC uses.
struct Walk {
  std::vector<std::string>* warnings;
  bool outlier_detection = false;
};

absl::Status CheckList(const ListValue& list, const std::string& path, Walk& walk,
                       absl::string_view* used, std::vector<std::string>* configs,
                       std::initializer_list<absl::string_view> allowed = {},
                       int first_index = 0);

// The childPolicy list of the config at `config_path`, when there (or
// `required`), each entry one of `allowed` when given.
absl::Status CheckChildPolicy(const Struct& c, const std::string& config_path, Walk& walk,
                              bool required, std::initializer_list<absl::string_view> allowed) {
  const std::string path = absl::StrCat(config_path, ".childPolicy");
  auto it = c.fields().find("childPolicy");
  if (it == c.fields().end()) {
    return required ? Bad(path, "required (gRFC A50), e.g. [{\"round_robin\": {}}]")
                    : absl::OkStatus();
  }
  if (it->second.kind_case() != Value::kListValue) {
    return Bad(path, absl::StrCat("must be an array, got ", Describe(it->second)));
  }
  absl::string_view child;
  return CheckList(it->second.list_value(), path, walk, &child, nullptr, allowed);
}

// grpclb's config at `config_path`: serviceName and a childPolicy list of
// pick_first or round_robin.
absl::Status CheckGrpclb(const Struct& c, const std::string& config_path, Walk& walk) {
  if (absl::Status s = OnlyFields(c, config_path, "grpclb", {"childPolicy", "serviceName"});
      !s.ok()) {
    return s;
  }
  if (auto it = c.fields().find("serviceName");
      it != c.fields().end() && it->second.kind_case() != Value::kStringValue) {
    return Bad(absl::StrCat(config_path, ".serviceName"),
               absl::StrCat("must be a string, got ", Describe(it->second)));
  }
  return CheckChildPolicy(c, config_path, walk, /*required=*/false, {"pick_first", "round_robin"});
}

// outlier_detection_experimental's config at `config_path` (gRFC A50): its
// durations and percentages in gRPC's bounds, a childPolicy list required.
absl::Status CheckOutlierDetection(const Struct& c, const std::string& config_path, Walk& walk) {
  const std::string& p = config_path;
  for (absl::Status s :
       {OnlyFields(c, p, "outlier_detection_experimental",
                   {"interval", "baseEjectionTime", "maxEjectionTime", "maxEjectionPercent",
                    "successRateEjection", "failurePercentageEjection", "childPolicy"}),
        Duration(c, p, "interval", kMaxIntervalSeconds),
        Duration(c, p, "baseEjectionTime", kMaxEjectionSeconds),
        Duration(c, p, "maxEjectionTime", kMaxEjectionSeconds),
        Integer(c, p, "maxEjectionPercent", 0, 100)}) {
    if (!s.ok()) return s;
  }
  for (absl::string_view algorithm : {"successRateEjection", "failurePercentageEjection"}) {
    auto it = c.fields().find(std::string(algorithm));
    if (it == c.fields().end()) continue;
    const std::string ap = absl::StrCat(p, ".", algorithm);
    if (it->second.kind_case() != Value::kStructValue) {
      return Bad(ap, absl::StrCat("must be an object, got ", Describe(it->second)));
    }
    const Struct& a = it->second.struct_value();
    const bool rate = algorithm == "successRateEjection";
    for (absl::Status s :
         {OnlyFields(a, ap, algorithm,
                     {rate ? "stdevFactor" : "threshold", "enforcementPercentage",
                      "minimumHosts", "requestVolume"}),
          rate ? Integer(a, ap, "stdevFactor", 0, kMaxUint32) : Integer(a, ap, "threshold", 0, 100),
          Integer(a, ap, "enforcementPercentage", 0, 100),
          Integer(a, ap, "minimumHosts", 0, kMaxUint32),
          Integer(a, ap, "requestVolume", 0, kMaxUint32)}) {
      if (!s.ok()) return s;
    }
  }
  return CheckChildPolicy(c, p, walk, /*required=*/true, {});
}

// One {"<name>": {config}} of a list at `path` ("loadBalancingConfig[0]").
absl::Status CheckEntry(const Value& entry, const std::string& path, Walk& walk,
                        absl::string_view* name_out,
                        std::initializer_list<absl::string_view> allowed) {
  if (entry.kind_case() != Value::kStructValue || entry.struct_value().fields_size() != 1) {
    return Bad(path, absl::StrCat("must be an object with one field, the policy's name, got ",
                                  entry.kind_case() == Value::kStructValue
                                      ? absl::StrCat("an object with ",
                                                     entry.struct_value().fields_size(), " fields")
                                      : Describe(entry)));
  }
  const auto& [name, config] = *entry.struct_value().fields().begin();
  const std::string config_path = absl::StrCat(path, ".", Printable(name, 64));
  const auto* known = std::find(std::begin(kPolicies), std::end(kPolicies), name);
  if (std::find(std::begin(kXdsPolicies), std::end(kXdsPolicies), name) !=
      std::end(kXdsPolicies)) {
    return Bad(config_path, "registered by gRPC 1.51 for xDS, which names its children and "
                            "sets the request hash they need; not for a policy file");
  }
  if (known == std::end(kPolicies)) {
    return Bad(config_path, absl::StrCat("not a load-balancing policy gRPC 1.51 registers (",
                                         absl::StrJoin(kPolicies, ", "), ")"));
  }
  if (allowed.size() > 0 && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
    return Bad(config_path, absl::StrCat("not allowed here (", absl::StrJoin(allowed, ", "), ")"));
  }
  *name_out = *known;
  if (config.kind_case() != Value::kStructValue) {
    return Bad(config_path, absl::StrCat("must be an object, got ", Describe(config)));
  }
  const Struct& c = config.struct_value();
  if (name == "pick_first" || name == "round_robin") {
    return OnlyFields(c, config_path, name, {});
  }
  if (name == "grpclb") return CheckGrpclb(c, config_path, walk);
  walk.outlier_detection = true;  // outlier_detection_experimental
  return CheckOutlierDetection(c, config_path, walk);
}

// A list of policies: gRPC uses the first; `*used` is its name. Each
// entry's JSON goes to `configs` when given.
absl::Status CheckList(const ListValue& list, const std::string& path, Walk& walk,
                       absl::string_view* used, std::vector<std::string>* configs,
                       std::initializer_list<absl::string_view> allowed, int first_index) {
  if (list.values_size() == 0) return Bad(path, "must name at least one policy, got []");
  for (int i = 0; i < list.values_size(); ++i) {
    const std::string entry_path = absl::StrCat(path, "[", first_index + i, "]");
    Walk entry_walk{walk.warnings};
    absl::string_view name;
    if (absl::Status s = CheckEntry(list.values(i), entry_path, entry_walk, &name, allowed);
        !s.ok()) {
      return s;
    }
    if (configs != nullptr) configs->push_back(ToJson(list.values(i)));
    if (i == 0) {
      *used = name;
      walk.outlier_detection = walk.outlier_detection || entry_walk.outlier_detection;
    } else {
      walk.warnings->push_back(absl::StrCat(
          entry_path, ": never used: gRPC takes the first policy of the list it knows (", path,
          "[", first_index, "], ", *used, ")"));
    }
  }
  return absl::OkStatus();
}

// loadBalancingPolicy: a policy that needs no config; unused after a
// loadBalancingConfig.
absl::Status CheckNamedPolicy(const v1::PolicyFile& file, LoadBalancingSettings& settings,
                              std::vector<std::string>& warnings) {
  if (file.load_balancing_policy().empty()) return absl::OkStatus();
  const std::string path = "loadBalancingPolicy";
  settings.policy = absl::AsciiStrToLower(file.load_balancing_policy());
  // gRPC takes here only policies that need no config.
  // grpclb requires a config (gRPC 1.51 says so and fails the channel).
  constexpr absl::string_view kNamed[] = {"pick_first", "round_robin"};
  if (std::find(std::begin(kNamed), std::end(kNamed), settings.policy) == std::end(kNamed)) {
    return Bad(path, absl::StrCat("must be one of ", absl::StrJoin(kNamed, ", "),
                                  " (gRPC 1.51 takes here only policies that need no "
                                  "config; others go in loadBalancingConfig), got ",
                                  QuoteJson(Printable(file.load_balancing_policy(), 64))));
  }
  if (!settings.configs.empty()) {
    warnings.push_back(
        "loadBalancingPolicy: not used: gRPC uses loadBalancingConfig when both are given");
  } else {
    settings.root = settings.picker = settings.policy;
  }
  return absl::OkStatus();
}

// healthCheckConfig: its serviceName; without effect under pick_first.
absl::Status CheckHealthCheck(const v1::PolicyFile& file, LoadBalancingSettings& settings,
                              std::vector<std::string>& warnings) {
  if (!file.has_health_check_config()) return absl::OkStatus();
  const std::string path = "healthCheckConfig";
  const Struct& h = file.health_check_config();
  if (absl::Status s = OnlyFields(h, path, path, {"serviceName"}); !s.ok()) return s;
  auto it = h.fields().find("serviceName");
  if (it != h.fields().end() && it->second.kind_case() != Value::kStringValue &&
      it->second.kind_case() != Value::kNullValue) {
    return Bad(absl::StrCat(path, ".serviceName"),
               absl::StrCat("must be a string, got ", Describe(it->second)));
  }
  settings.health_check_service =
      it != h.fields().end() && it->second.kind_case() == Value::kStringValue
          ? it->second.string_value()
          : "";
  if (settings.picker.empty() || settings.picker == "pick_first") {
    warnings.push_back(absl::StrCat(
        path, ": no effect under pick_first",
        settings.picker.empty() ? " (gRPC's default, as no loadBalancingConfig is given)" : "",
        ": gRPC 1.51 checks health under round_robin; add \"loadBalancingConfig\": "
        "[{\"round_robin\": {}}]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadBalancingSettings> LoadBalancingChecker::Check(
    const v1::PolicyFile& file, std::vector<std::string>& warnings) {
  LoadBalancingSettings settings;
  Walk walk{&warnings};
  int first = 0;
  for (int i = 0; i < file.load_balancing_config_size(); ++i) {
    const Struct& entry = file.load_balancing_config(i);
    if (entry.fields_size() != 1 || entry.fields().begin()->first != kOwnPicker) continue;
    if (i > 0) {
      return Bad(absl::StrCat("loadBalancingConfig[", i, "].", kOwnPicker),
                 "must be the first entry: the library's picker takes the unary calls, the "
                 "entries after it name gRPC's policy for the rest");
    }
    settings.routing.emplace();
    if (absl::Status s = CheckOwnPicker(entry, *settings.routing); !s.ok()) return s;
    first = 1;
  }
  if (settings.routing.has_value() && file.load_balancing_config_size() == 1 &&
      file.load_balancing_policy().empty()) {
    settings.configs.push_back("{\"round_robin\": {}}");
    settings.root = settings.picker = "round_robin";
  }
  if (file.load_balancing_config_size() > first) {
    ListValue list;
    for (int i = first; i < file.load_balancing_config_size(); ++i) {
      *list.add_values()->mutable_struct_value() = file.load_balancing_config(i);
    }
    absl::string_view used;
    if (absl::Status s = CheckList(list, "loadBalancingConfig", walk, &used, &settings.configs,
                                   {}, first);
        !s.ok()) {
      return s;
    }
    settings.root = std::string(used);
    settings.outlier_detection = walk.outlier_detection;
    if (settings.root == "outlier_detection_experimental") {
      const Struct& od = list.values(0).struct_value().fields().begin()->second.struct_value();
      const Value& child = od.fields().at("childPolicy").list_value().values(0);
      settings.picker = child.struct_value().fields().begin()->first;
    } else {
      settings.picker = settings.root;
    }
  }
  if (absl::Status s = CheckNamedPolicy(file, settings, warnings); !s.ok()) return s;
  if (absl::Status s = CheckHealthCheck(file, settings, warnings); !s.ok()) return s;
  return settings;
}

}  // namespace resilience
