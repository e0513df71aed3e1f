#include "src/policy/method_catalog.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor_database.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

// Optimal string alignment distance (Levenshtein plus transpositions of
// adjacent characters), case-insensitive.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  const std::string x = absl::AsciiStrToLower(a);
  const std::string y = absl::AsciiStrToLower(b);
  const size_t n = x.size(), m = y.size();
  // Three rows: i - 2, i - 1, i.
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = x[i - 1] == y[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

// The most edits for which `name` still suggests another name: a third of
// its length, at least one.
size_t Limit(absl::string_view name) { return std::max<size_t>(1, name.size() / 3); }

// "pkg.v1.Service" -> "Service".
absl::string_view WithoutPackage(absl::string_view service) {
  const size_t dot = service.rfind('.');
  return dot == absl::string_view::npos ? service : service.substr(dot + 1);
}

}  // namespace

MethodCatalog::MethodCatalog(std::vector<Method> methods) : methods_(std::move(methods)) {
  std::stable_sort(methods_.begin(), methods_.end(), [](const Method& a, const Method& b) {
    return std::tie(a.service, a.method) < std::tie(b.service, b.method);
  });
  methods_.erase(std::unique(methods_.begin(), methods_.end(),
                             [](const Method& a, const Method& b) {
                               return a.service == b.service && a.method == b.method;
                             }),
                 methods_.end());
  for (size_t i = 0; i < methods_.size(); ++i) {
    by_full_name_.emplace(methods_[i].full_name(), i);
    by_service_[methods_[i].service].push_back(i);
  }
}

MethodCatalog MethodCatalog::FromGeneratedDatabase(
    google::protobuf::DescriptorDatabase& database,
    const google::protobuf::DescriptorPool& pool) {
  std::vector<std::string> files;
  database.FindAllFileNames(&files);
  std::vector<Method> methods;
  for (const std::string& name : files) {
    const google::protobuf::FileDescriptor* file = pool.FindFileByName(name);
    if (file == nullptr) continue;
    for (int s = 0; s < file->service_count(); ++s) {
      const google::protobuf::ServiceDescriptor* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        const google::protobuf::MethodDescriptor* method = service->method(m);
        methods.push_back(Method{service->full_name(), method->name(),
                                 method->client_streaming(), method->server_streaming()});
      }
    }
  }
  return MethodCatalog(std::move(methods));
}

const MethodCatalog& MethodCatalog::Linked() {
  static const MethodCatalog* const linked = new MethodCatalog(
      FromGeneratedDatabase(*google::protobuf::DescriptorPool::internal_generated_database(),
                            *google::protobuf::DescriptorPool::generated_pool()));
  return *linked;
}

const MethodCatalog::Method* MethodCatalog::Find(absl::string_view full_name) const {
  auto it = by_full_name_.find(full_name);
  return it == by_full_name_.end() ? nullptr : &methods_[it->second];
}

bool MethodCatalog::HasService(absl::string_view service) const {
  return by_service_.contains(service);
}

std::optional<std::string> MethodCatalog::NearestService(absl::string_view service) const {
  // Best first: fewest edits of either form, then of the full name, then by
  // name (deterministic).
  std::optional<std::tuple<size_t, size_t, std::string>> best;
  const absl::string_view short_name = WithoutPackage(service);
  for (const auto& [candidate, unused] : by_service_) {
    const size_t full = EditDistance(service, candidate);
    const size_t short_distance = EditDistance(short_name, WithoutPackage(candidate));
    if (full > Limit(service) && short_distance > Limit(short_name)) continue;
    auto key = std::make_tuple(std::min(full, short_distance), full, candidate);
    if (!best.has_value() || key < *best) best = std::move(key);
  }
  if (!best.has_value()) return std::nullopt;
  return std::get<2>(*best);
}

std::optional<std::string> MethodCatalog::NearestMethod(absl::string_view service,
                                                        absl::string_view method) const {
  auto it = by_service_.find(service);
  if (it == by_service_.end()) return std::nullopt;
  std::optional<std::pair<size_t, size_t>> best;  // distance, index
  for (size_t index : it->second) {
    const size_t distance = EditDistance(method, methods_[index].method);
    if (distance > Limit(method)) continue;
    // Indexes ascend with the name, so the first of equal distance wins.
    if (!best.has_value() || distance < best->first) best = std::make_pair(distance, index);
  }
  if (!best.has_value()) return std::nullopt;
  return methods_[best->second].full_name();
}

std::vector<std::string> UnlinkedNameWarnings(const PolicyTable& policies,
                                              const MethodCatalog& catalog) {
  std::vector<std::string> warnings;
  for (const PolicyTable::Name& name : policies.names()) {
    if (name.service.empty()) continue;  // the default
    if (!catalog.HasService(name.service)) {
      std::string warning = absl::StrCat(name.path, ": service \"", name.service,
                                         "\" is not linked into this process");
      if (std::optional<std::string> near = catalog.NearestService(name.service)) {
        absl::StrAppend(&warning, " (did you mean \"", *near, "\"?)");
      }
      warnings.push_back(std::move(warning));
      continue;
    }
    if (name.method.empty()) continue;
    if (catalog.Find(absl::StrCat("/", name.service, "/", name.method)) != nullptr) continue;
    std::string warning = absl::StrCat(name.path, ": method \"", name.method,
                                       "\" is not in service ", name.service);
    if (std::optional<std::string> near = catalog.NearestMethod(name.service, name.method)) {
      absl::StrAppend(&warning, " (did you mean \"", *near, "\"?)");
    }
    warnings.push_back(std::move(warning));
  }
  return warnings;
}

std::optional<std::string> HealthServiceNameWarning(const PolicyTable& policies,
                                                    const MethodCatalog& catalog) {
  const std::optional<std::string>& name = policies.load_balancing().health_check_service;
  if (!name.has_value() || name->empty() || catalog.HasService(*name)) return std::nullopt;
  // The candidates: the services the file names, and the linked ones.
  std::vector<MethodCatalog::Method> candidates = catalog.methods();
  for (const PolicyTable::Name& n : policies.names()) {
    if (n.service == *name) return std::nullopt;
    if (!n.service.empty()) candidates.push_back({n.service, n.method});
  }
  std::string warning = absl::StrCat(
      "healthCheckConfig.serviceName: ", internal::QuoteJson(internal::Printable(*name, 128)),
      " is not a service this file names or this process links, nor \"\" (the whole server)");
  if (std::optional<std::string> near =
          MethodCatalog(std::move(candidates)).NearestService(*name)) {
    absl::StrAppend(&warning, " (did you mean \"", *near, "\"?)");
  }
  absl::StrAppend(&warning,
                  ": a server whose health service does not know the name answers "
                  "SERVICE_UNKNOWN, which gRPC 1.51 takes as NOT_SERVING, and every call of the "
                  "channel fails UNAVAILABLE (\"backend unhealthy\")");
  return warning;
}

}  // namespace resilience
