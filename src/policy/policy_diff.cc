#include "src/policy/policy_diff.h"

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

// The full names ("/pkg.Service/Method") a table names exactly.
void AddNamedMethods(const PolicyTable& table, std::set<std::string>& names) {
  for (const PolicyTable::Name& name : table.names()) {
    if (!name.service.empty() && !name.method.empty()) {
      names.insert(absl::StrCat("/", name.service, "/", name.method));
    }
  }
}

}  // namespace

PolicyDiff PolicyDiff::Of(const PolicyTable& before, const PolicyTable& after,
                          std::set<std::string> methods, SidePolicy policy_of,
                          SideForm form) {
  AddNamedMethods(before, methods);
  AddNamedMethods(after, methods);
  PolicyDiff update;
  for (const std::string& name : methods) {
    const MethodPolicy* was = policy_of(before, name);
    const MethodPolicy* now = policy_of(after, name);
    if (was == nullptr && now == nullptr) continue;
    if (was == nullptr) {
      update.added.push_back(name);
    } else if (now == nullptr) {
      update.removed.push_back(name);
    } else if (was->canonical.*form != now->canonical.*form) {
      update.changed.push_back(name);
    } else {
      ++update.unchanged;
    }
  }
  return update;
}

}  // namespace resilience
