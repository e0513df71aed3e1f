// File: src/policy/policy_set.cc
//
// The public PolicySet over the PolicyTable the loader builds.

#include <memory>
#include <utility>

#include "grpc_resilience/policy.h"
#include "src/policy/policy_set_access.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

const std::shared_ptr<const PolicyTable>& EmptyTable() {
  static const auto* const empty =
      new std::shared_ptr<const PolicyTable>(std::make_shared<const PolicyTable>());
  return *empty;
}

PolicyTable::LoadOptions TableOptions(const PolicySet::LoadOptions& options) {
  PolicyTable::LoadOptions table_options;
  table_options.strict = options.strict;
  return table_options;
}

}  // namespace

static_assert(PolicySet::kMaxFileBytes == PolicyTable::kMaxFileBytes);

absl::StatusOr<PolicySet> PolicySet::FromJsonString(absl::string_view json,
                                                    LoadOptions options) {
  absl::StatusOr<PolicyTable> table = PolicyTable::FromJsonString(json, TableOptions(options));
  if (!table.ok()) return table.status();
  return PolicySetAccess::Wrap(*std::move(table));
}

absl::StatusOr<PolicySet> PolicySet::FromJsonFile(const std::string& path, LoadOptions options) {
  absl::StatusOr<PolicyTable> table = PolicyTable::FromJsonFile(path, TableOptions(options));
  if (!table.ok()) return table.status();
  return PolicySetAccess::Wrap(*std::move(table));
}

PolicySet::PolicySet() : table_(EmptyTable()) {}
PolicySet::PolicySet(std::shared_ptr<const PolicyTable> table) : table_(std::move(table)) {}
PolicySet::~PolicySet() = default;
PolicySet::PolicySet(const PolicySet&) = default;
PolicySet& PolicySet::operator=(const PolicySet&) = default;
// A move copies the pointer: the moved-from set keeps its policies (the
// table is immutable and shared), so it never holds a null table.
PolicySet::PolicySet(PolicySet&& other) noexcept : table_(other.table_) {}
PolicySet& PolicySet::operator=(PolicySet&& other) noexcept {
  table_ = other.table_;
  return *this;
}

const std::vector<std::string>& PolicySet::warnings() const { return table_->warnings(); }

PolicySet PolicySetAccess::Wrap(PolicyTable table) {
  return PolicySet(std::make_shared<const PolicyTable>(std::move(table)));
}

}  // namespace resilience
