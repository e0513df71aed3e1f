#include "grpc_resilience/policy_update.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace resilience {

std::string PolicyUpdate::Summary() const {
  std::vector<std::string> parts;
  const auto count = [&parts](size_t n, absl::string_view what) {
    if (n == 0) return;
    parts.push_back(parts.empty()
                        ? absl::StrCat(n, n == 1 ? " method " : " methods ", what)
                        : absl::StrCat(n, " ", what));
  };
  count(changed.size(), "changed");
  count(added.size(), "added");
  count(removed.size(), "removed");
  if (parts.empty()) return "no method changed";
  return absl::StrJoin(parts, ", ");
}

}  // namespace resilience
