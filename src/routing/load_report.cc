#include "src/routing/load_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "src/routing/load_report_wire.h"

namespace resilience {
namespace {

namespace wire = load_report_wire;

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

char* PutVarint(uint64_t v, char* p) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

uint64_t Bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return bits;
}

char* PutFixed64(uint64_t v, char* p) {
  if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
    std::memcpy(p, &v, 8);  // one store
    return p + 8;
  }
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
  return p;
}

// Tags of fields 1..15 are one byte.
constexpr char Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<char>(field << 3 | wire_type);
}

// A map entry's bytes after its tag and length: key (1), value (2).
size_t EntrySize(const std::string& key) { return 1 + VarintSize(key.size()) + key.size() + 1 + 8; }

size_t MapSize(const std::map<std::string, double>& map) {
  size_t n = 0;
  for (const auto& [key, value] : map) {
    const size_t entry = EntrySize(key);
    n += 1 + VarintSize(entry) + entry;
  }
  return n;
}

char* PutDouble(uint32_t field, double value, char* p) {
  const uint64_t bits = Bits(value);
  if (bits == 0) return p;
  *p++ = Tag(field, wire::kFixed64);
  return PutFixed64(bits, p);
}

char* PutMap(uint32_t field, const std::map<std::string, double>& map, char* p) {
  for (const auto& [key, value] : map) {
    *p++ = Tag(field, wire::kLengthDelimited);
    p = PutVarint(EntrySize(key), p);
    *p++ = Tag(wire::kEntryKey, wire::kLengthDelimited);
    p = PutVarint(key.size(), p);
    if (!key.empty()) std::memcpy(p, key.data(), key.size());
    p += key.size();
    *p++ = Tag(wire::kEntryValue, wire::kFixed64);
    p = PutFixed64(Bits(value), p);
  }
  return p;
}

}  // namespace

double LoadReport::Utilization() const {
  double figure = cpu_utilization;
  if (application_utilization > 0) {
    figure = application_utilization;
  } else {
    bool any = false;
    double most = 0;
    for (const auto& [name, value] : utilization) {
      if (std::isnan(value)) continue;
      most = any ? std::max(most, value) : value;
      any = true;
    }
    if (any) figure = most;
  }
  if (std::isnan(figure)) return 0;
  return std::clamp(figure, 0.0, 1.0);
}

bool operator==(const LoadReport& a, const LoadReport& b) {
  // Bitwise for the scalars: NaN equals NaN, -0.0 differs from 0.
  return Bits(a.cpu_utilization) == Bits(b.cpu_utilization) &&
         Bits(a.mem_utilization) == Bits(b.mem_utilization) &&
         Bits(a.application_utilization) == Bits(b.application_utilization) &&
         Bits(a.rps_fractional) == Bits(b.rps_fractional) && Bits(a.eps) == Bits(b.eps) &&
         a.request_cost == b.request_cost && a.utilization == b.utilization &&
         a.named_metrics == b.named_metrics;
}

void AppendLoadReport(const LoadReport& report, std::string* out) {
  const size_t size =
      MapSize(report.request_cost) + MapSize(report.utilization) + MapSize(report.named_metrics) +
      9 * ((Bits(report.cpu_utilization) != 0) + (Bits(report.mem_utilization) != 0) +
           (Bits(report.rps_fractional) != 0) + (Bits(report.eps) != 0) +
           (Bits(report.application_utilization) != 0));
  const size_t old = out->size();
  out->resize(old + size);
  char* p = &(*out)[old];
  p = PutDouble(wire::kCpuUtilization, report.cpu_utilization, p);
  p = PutDouble(wire::kMemUtilization, report.mem_utilization, p);
  p = PutMap(wire::kRequestCost, report.request_cost, p);
  p = PutMap(wire::kUtilization, report.utilization, p);
  p = PutDouble(wire::kRpsFractional, report.rps_fractional, p);
  p = PutDouble(wire::kEps, report.eps, p);
  p = PutMap(wire::kNamedMetrics, report.named_metrics, p);
  PutDouble(wire::kApplicationUtilization, report.application_utilization, p);
}

std::string SerializeLoadReport(const LoadReport& report) {
  std::string out;
  AppendLoadReport(report, &out);
  return out;
}

}  // namespace resilience
