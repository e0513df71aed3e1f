#include "src/grpc_common/reported_load.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/grpc_common/metadata_keys.h"
#include "src/routing/load_report.h"

namespace resilience {

std::optional<double> ReportedUtilization(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers) {
  std::optional<grpc::string_ref> value = FindMetadata(trailers, kReadableLoadReportKey);
  if (!value.has_value()) value = FindMetadata(trailers, kLoadReportKey);
  if (!value.has_value()) return std::nullopt;
  const absl::StatusOr<LoadReport> report =
      ParseLoadReport(absl::string_view(value->data(), value->size()));
  if (!report.ok()) return std::nullopt;
  return report->Utilization();
}

}  // namespace resilience
