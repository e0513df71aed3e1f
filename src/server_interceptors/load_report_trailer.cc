#include "src/server_interceptors/load_report_trailer.h"

#include <algorithm>

#include "src/grpc_common/metadata_keys.h"
#include "src/routing/load_report.h"

namespace resilience {

std::string ScopeLoadReport(ScopeLimits& limits, absl::Time now) {
  // One per thread: its map's node is made once, not per call, and its
  // value is written in place. A per-thread cache of the encoder, filled
  // and serialized within this call: it carries nothing of any call from
  // one hook (or one call) to another.
  thread_local LoadReport report;
  thread_local double* concurrency = nullptr;
  double application = 0;
  if (limits.concurrency != nullptr) {
    const int64_t limit = limits.concurrency->limit();
    const double used = limit > 0 ? static_cast<double>(limits.concurrency->in_flight()) /
                                        static_cast<double>(limit)
                                  : 1.0;
    if (concurrency == nullptr) concurrency = &report.utilization[kConcurrencyUtilization];
    *concurrency = used;
    application = used;
  } else if (concurrency != nullptr) {
    report.utilization.clear();
    concurrency = nullptr;
  }
  report.cpu_utilization = 0;
  if (limits.cpu_threshold.has_value()) {
    report.cpu_utilization = limits.cpu_meter->Utilisation();
    application = std::max(application, report.cpu_utilization);
  }
  report.application_utilization = application;
  report.eps = limits.rejection_rate.PerSecond(now);
  return SerializeLoadReport(report);
}

void AddLoadReport(std::multimap<std::string, std::string>& trailers, std::string report) {
  trailers.emplace(kReadableLoadReportKey, std::move(report));
}

}  // namespace resilience
