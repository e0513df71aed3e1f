// The ORCA load report codec (src/routing/load_report.h) against protobuf's
// own encoding of xds.data.orca.v3.OrcaLoadReport (a test-only proto with the
// published field numbers): what one writes the other reads, byte for byte
// the same as protobuf's deterministic output; unknown fields skipped;
// truncated and malformed input refused with the field and byte named,
// never read past its end (ASan), over seeded random mutations too.

#include "src/routing/load_report.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "routing/orca_load_report.pb.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using Orca = ::xds::data::orca::v3::OrcaLoadReport;

LoadReport Full() {
  LoadReport r;
  r.cpu_utilization = 0.25;
  r.mem_utilization = 0.5;
  r.application_utilization = 0.75;
  r.rps_fractional = 1234.5;
  r.eps = 3.25;
  r.request_cost = {{"db", 2.5}, {"", 1}};
  r.utilization = {{"concurrency", 0.4}, {"queue", 0.1}, {std::string(200, 'k'), 0}};
  r.named_metrics = {{"x", -1e300}};
  return r;
}

Orca ToProto(const LoadReport& r) {
  Orca o;
  o.set_cpu_utilization(r.cpu_utilization);
  o.set_mem_utilization(r.mem_utilization);
  o.set_application_utilization(r.application_utilization);
  o.set_rps_fractional(r.rps_fractional);
  o.set_eps(r.eps);
  for (const auto& [k, v] : r.request_cost) (*o.mutable_request_cost())[k] = v;
  for (const auto& [k, v] : r.utilization) (*o.mutable_utilization())[k] = v;
  for (const auto& [k, v] : r.named_metrics) (*o.mutable_named_metrics())[k] = v;
  return o;
}

LoadReport FromProto(const Orca& o) {
  LoadReport r;
  r.cpu_utilization = o.cpu_utilization();
  r.mem_utilization = o.mem_utilization();
  r.application_utilization = o.application_utilization();
  r.rps_fractional = o.rps_fractional();
  r.eps = o.eps();
  r.request_cost.insert(o.request_cost().begin(), o.request_cost().end());
  r.utilization.insert(o.utilization().begin(), o.utilization().end());
  r.named_metrics.insert(o.named_metrics().begin(), o.named_metrics().end());
  return r;
}

std::string Deterministic(const Orca& o) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    o.SerializeToCodedStream(&coded);
  }
  return out;
}

TEST(LoadReportTest, ProtobufReadsWhatWeWriteByteForByte) {
  const LoadReport r = Full();
  const std::string ours = SerializeLoadReport(r);
  EXPECT_EQ(ours, Deterministic(ToProto(r))) << "the same bytes as protobuf's deterministic form";
  Orca parsed;
  ASSERT_TRUE(parsed.ParseFromString(ours));
  EXPECT_EQ(FromProto(parsed), r);
  EXPECT_EQ(SerializeLoadReport(LoadReport()), "") << "an empty report is zero bytes";
}

TEST(LoadReportTest, WeReadWhatProtobufWritesSkippingUnknownFields) {
  Orca o = ToProto(Full());
  o.set_rps(77);  // deprecated: not kept, skipped as an unknown varint
  std::string bytes = o.SerializeAsString();
  absl::StatusOr<LoadReport> parsed = ParseLoadReport(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, Full());
  // Fields of a newer version: a varint, fixed32, fixed64 and length-delimited
  // of high numbers, at the top and inside a map entry.
  bytes += std::string("\xf8\x01\x96\x01", 4);                // 31: varint 150
  bytes += std::string("\xfd\x01\x01\x02\x03\x04", 6);        // 31: fixed32
  bytes += std::string("\xa1\x06", 2) + std::string(8, 'z');  // 100: fixed64
  bytes += std::string(
      "\xa2\x06\x03"
      "abc",
      6);  // 100: 3 bytes
  bytes += std::string("\x2a\x0e\x0a\x01q\x11", 6) + std::string(8, '\0') +
           std::string("\x18\x05", 2);  // utilization {"q": 0, field 3: 5}
  Orca check;
  ASSERT_TRUE(check.ParseFromString(bytes)) << "protobuf takes these bytes too";
  EXPECT_EQ(check.utilization().at("q"), 0);
  parsed = ParseLoadReport(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  LoadReport want = Full();
  want.utilization["q"] = 0;
  EXPECT_EQ(*parsed, want);
}

TEST(LoadReportTest, LastValueWinsAsInProtobuf) {
  LoadReport first;
  first.cpu_utilization = 0.1;
  first.utilization = {{"a", 0.1}};
  LoadReport second;
  second.cpu_utilization = 0.9;
  second.utilization = {{"a", 0.9}};
  const std::string bytes = SerializeLoadReport(first) + SerializeLoadReport(second);
  absl::StatusOr<LoadReport> parsed = ParseLoadReport(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, second);
  Orca o;
  ASSERT_TRUE(o.ParseFromString(bytes));
  EXPECT_EQ(FromProto(o), second);
}

TEST(LoadReportTest, ErrorsNameTheFieldAndTheByte) {
  const auto error = [](const std::string& bytes) {
    absl::StatusOr<LoadReport> r = ParseLoadReport(bytes);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  EXPECT_EQ(error(std::string("\x08\x01", 2)),
            "load report: field 1 (cpu_utilization) at byte 0: wire type 0, expected 1 (64-bit)");
  EXPECT_EQ(error(std::string("\x09\x00\x00\x00", 4)),
            "load report: field 1 (cpu_utilization) at byte 0: 8 bytes run past the end (3 left)");
  EXPECT_EQ(error(std::string("\x39", 1) + std::string(8, '\0') + "\x2a\x1e\x0a"),
            "load report: field 5 (utilization) at byte 9: length 30 runs past the end (1 bytes "
            "left)");
  EXPECT_EQ(error(std::string("\x29", 1)),
            "load report: field 5 (utilization) at byte 0: wire type 1, expected 2 "
            "(length-delimited)");
  EXPECT_EQ(error(std::string("\x00", 1)), "load report: byte 0: field number 0 is not valid");
  EXPECT_EQ(error(std::string("\x80", 1)), "load report: byte 0: truncated or overlong tag");
  EXPECT_EQ(error(std::string("\x1b", 1)),
            "load report: field 3 (unknown) at byte 0: wire type 3 (group) is not supported");
  EXPECT_EQ(error(std::string("\x1e", 1)),
            "load report: field 3 (unknown) at byte 0: wire type 6 is not valid");
  // Inside a map entry: the entry's bounds, not the message's.
  EXPECT_EQ(error(std::string("\x2a\x03\x0a\x05q", 5) + std::string(8, 'x')),
            "load report: field 5 (utilization) entry at byte 0: field 1 (key) at byte 2: "
            "length 5 runs past the end (1 bytes left)");
  EXPECT_EQ(error(std::string("\x2a\x02\x10\x01", 4)),
            "load report: field 5 (utilization) entry at byte 0: field 2 (value) at byte 2: "
            "wire type 0, expected 1 (64-bit)");
}

TEST(LoadReportTest, EveryTruncationIsRefusedOrAFieldBoundary) {
  const std::string bytes = SerializeLoadReport(Full());
  int accepted = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A copy of its own, so that ASan sees any read past the prefix.
    const std::string prefix = bytes.substr(0, n);
    absl::StatusOr<LoadReport> parsed = ParseLoadReport(prefix);
    Orca o;
    const bool protobuf_ok = o.ParseFromString(prefix);
    EXPECT_EQ(parsed.ok(), protobuf_ok) << "prefix of " << n << " bytes: " << parsed.status();
    if (parsed.ok()) ++accepted;
  }
  // Whole fields end at: 0, after each of 5 scalars and 6 map entries.
  EXPECT_EQ(accepted, 11);
}

// Seeded random inputs and single-byte mutations of a valid report: no crash
// and no read out of bounds (ASan); whatever both accept, both read alike.
TEST(LoadReportTest, RandomInputIsSafeAndAgreesWithProtobuf) {
  google::protobuf::LogSilencer silence;  // protobuf logs its parse errors
  std::mt19937_64 random(20261207);
  const std::string valid = SerializeLoadReport(Full());
  int both_accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes = valid;
      for (int k = 0; k < 1 + static_cast<int>(random() % 3); ++k) {
        bytes[random() % bytes.size()] = static_cast<char>(random());
      }
      if (random() % 4 == 0) bytes.resize(random() % bytes.size());
    } else {
      bytes.resize(random() % 40);
      for (char& c : bytes) c = static_cast<char>(random() % 8 == 0 ? random() : random() % 0x60);
    }
    absl::StatusOr<LoadReport> parsed = ParseLoadReport(bytes);
    if (parsed.ok()) {
      (void)parsed->Utilization();
      Orca o;
      if (o.ParseFromString(bytes)) {
        ++both_accepted;
        EXPECT_EQ(*parsed, FromProto(o)) << "input " << i;
      }
    }
  }
  EXPECT_GT(both_accepted, 100) << "the comparison saw accepted inputs";
}

TEST(LoadReportTest, UtilizationPrefersApplicationThenTheMapThenCpu) {
  LoadReport r;
  EXPECT_EQ(r.Utilization(), 0) << "an empty report: idle";
  r.cpu_utilization = 0.3;
  EXPECT_DOUBLE_EQ(r.Utilization(), 0.3);
  r.utilization = {{"concurrency", 0.5}, {"queue", 0.7}};
  EXPECT_DOUBLE_EQ(r.Utilization(), 0.7) << "the largest of the map";
  r.utilization["nan"] = std::nan("");
  EXPECT_DOUBLE_EQ(r.Utilization(), 0.7) << "a NaN in the map is passed over";
  r.application_utilization = 0.2;
  EXPECT_DOUBLE_EQ(r.Utilization(), 0.2) << "application_utilization first";
  r.application_utilization = 1.8;
  EXPECT_EQ(r.Utilization(), 1) << "over its share: full";
  r.application_utilization = 0;
  r.utilization = {{"only", -0.5}};
  EXPECT_EQ(r.Utilization(), 0) << "negative: empty";
  r.utilization = {{"nan", std::nan("")}};
  EXPECT_DOUBLE_EQ(r.Utilization(), 0.3) << "a map of NaNs only: the CPU figure";
  r.utilization.clear();
  r.cpu_utilization = std::nan("");
  EXPECT_EQ(r.Utilization(), 0) << "NaN: empty, never better than an idle endpoint";
  r.cpu_utilization = std::numeric_limits<double>::infinity();
  EXPECT_EQ(r.Utilization(), 1);
}

}  // namespace
}  // namespace resilience
