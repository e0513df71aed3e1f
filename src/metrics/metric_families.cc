#include "src/metrics/metric_families.h"

#include <cassert>
#include <cstddef>
#include <utility>

namespace resilience {
namespace {

// The first and last MetricId of `group`.
std::pair<MetricId, MetricId> Range(MetricGroup group) {
  switch (group) {
    case MetricGroup::kClient:
      return {MetricId::kClientCalls, MetricId::kClientPolicyReloadFailures};
    case MetricGroup::kServer:
      return {MetricId::kServerCalls, MetricId::kServerShadowRejections};
    case MetricGroup::kServerPerCaller:
      return {MetricId::kServerPerCallerKeys, MetricId::kServerPerCallerRejections};
    case MetricGroup::kGlobalLimits:
      break;
  }
  return {MetricId::kGlobalLimitUsingStore, MetricId::kGlobalLimitBucketRepairs};
}

}  // namespace

MetricFamilies::MetricFamilies(PrometheusText &text, MetricGroup group)
    : first_(Range(group).first) {
  const size_t first = static_cast<size_t>(Range(group).first);
  const size_t last = static_cast<size_t>(Range(group).second);
  families_.reserve(last - first + 1);
  for (size_t id = first; id <= last; ++id) {
    families_.push_back(&MetricCatalog::Declare(text, static_cast<MetricId>(id)));
  }
}

PrometheusText::Family &MetricFamilies::operator[](MetricId id) const {
  const size_t index = static_cast<size_t>(id) - static_cast<size_t>(first_);
  assert(static_cast<size_t>(id) >= static_cast<size_t>(first_) && index < families_.size());
  return *families_[index < families_.size() ? index : 0];
}

}  // namespace resilience
