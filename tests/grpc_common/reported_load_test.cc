// ReportedUtilization(): the load report in a call's trailers as the one
// figure the picker uses; nothing for a missing or malformed trailer.

#include "src/grpc_common/reported_load.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "src/routing/load_report.h"

namespace resilience {
namespace {

using Trailers = std::multimap<grpc::string_ref, grpc::string_ref>;

TEST(ReportedUtilizationTest, ReadsTheReportsFigure) {
  LoadReport report;
  report.cpu_utilization = 0.9;
  report.utilization = {{"concurrency", 0.25}};
  report.eps = 12;
  const std::string bytes = SerializeLoadReport(report);
  const std::string pushback = "100";
  Trailers trailers = {{"grpc-retry-pushback-ms", pushback}, {"endpoint-load-metrics-bin", bytes}};
  ASSERT_TRUE(ReportedUtilization(trailers).has_value());
  EXPECT_DOUBLE_EQ(*ReportedUtilization(trailers), 0.25) << "the map before the CPU figure";

  const std::string empty;
  trailers = {{"endpoint-load-metrics-bin", empty}};
  EXPECT_EQ(ReportedUtilization(trailers), 0.0) << "an empty report: idle";
}

TEST(ReportedUtilizationTest, PrefersTheKeyA151ClientCanRead) {
  LoadReport ours;
  ours.application_utilization = 0.6;
  LoadReport orca;
  orca.application_utilization = 0.1;
  const std::string ours_bytes = SerializeLoadReport(ours);
  const std::string orca_bytes = SerializeLoadReport(orca);
  const Trailers both = {{"endpoint-load-metrics-bin", orca_bytes},
                         {"orca-load-bin", ours_bytes}};
  EXPECT_EQ(ReportedUtilization(both), 0.6);
  const Trailers ours_only = {{"orca-load-bin", ours_bytes}};
  EXPECT_EQ(ReportedUtilization(ours_only), 0.6);
}

TEST(ReportedUtilizationTest, NothingWithoutAParsableTrailer) {
  EXPECT_EQ(ReportedUtilization(Trailers()), std::nullopt);
  const std::string pushback = "100";
  EXPECT_EQ(ReportedUtilization(Trailers{{"grpc-retry-pushback-ms", pushback}}), std::nullopt);
  // Truncated, a wrong wire type, text, a lone continuation byte.
  for (const std::string& bad : {std::string("\x09\x00\x00", 3), std::string("\x08\x01", 2),
                                 std::string("0.5"), std::string("\xff", 1)}) {
    EXPECT_EQ(ReportedUtilization(Trailers{{"endpoint-load-metrics-bin", bad}}), std::nullopt)
        << "value of " << bad.size() << " bytes";
  }
}

}  // namespace
}  // namespace resilience
