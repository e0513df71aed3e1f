// ParseLoadReport(): a serialized OrcaLoadReport read field by field, every
// read bounds-checked, each error naming the field and the byte.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/routing/load_report.h"
#include "src/routing/load_report_wire.h"

namespace resilience {
namespace {

namespace wire = load_report_wire;

constexpr char kPrefix[] = "load report: ";

const char* FieldName(uint32_t field) {
  switch (field) {
    case wire::kCpuUtilization:
      return "cpu_utilization";
    case wire::kMemUtilization:
      return "mem_utilization";
    case wire::kRequestCost:
      return "request_cost";
    case wire::kUtilization:
      return "utilization";
    case wire::kRpsFractional:
      return "rps_fractional";
    case wire::kEps:
      return "eps";
    case wire::kNamedMetrics:
      return "named_metrics";
    case wire::kApplicationUtilization:
      return "application_utilization";
    default:
      return "unknown";
  }
}

// Reads `bytes` from `pos` on; every read is bounds-checked against `end`
// (the end of the message or of the entry being read).
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  // A varint at `*pos` (before `end`), advancing `*pos`; false when it runs
  // past `end` or over 10 bytes.
  bool Varint(size_t* pos, size_t end, uint64_t* value) const {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(bytes_[(*pos)++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = v;
        return true;
      }
    }
    return false;
  }

  double Double(size_t pos) const {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) {
      bits |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[pos + i])) << (8 * i);
    }
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }

  absl::string_view Sub(size_t pos, size_t size) const { return bytes_.substr(pos, size); }

 private:
  const absl::string_view bytes_;
};

// Where an error is: "field 5 (utilization) at byte 12"; inside a map
// entry (`inside` non-empty, naming the entry) the entry's own fields are
// "key" (1) and "value" (2).
std::string Where(uint32_t field, size_t at, const std::string& inside) {
  const char* name = inside.empty()               ? FieldName(field)
                     : field == wire::kEntryKey   ? "key"
                     : field == wire::kEntryValue ? "value"
                                                  : "unknown";
  return absl::StrCat(kPrefix, inside, "field ", field, " (", name, ") at byte ", at);
}

// One field's tag at `*pos`: its number and wire type. Errors name `inside`.
absl::Status ReadTag(const Reader& in, size_t* pos, size_t end, const std::string& inside,
                     uint32_t* field, uint32_t* wire_type) {
  const size_t at = *pos;
  uint64_t tag = 0;
  if (!in.Varint(pos, end, &tag)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPrefix, inside, "byte ", at, ": truncated or overlong tag"));
  }
  if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPrefix, inside, "byte ", at, ": field number ", tag >> 3, " is not valid"));
  }
  *field = static_cast<uint32_t>(tag >> 3);
  *wire_type = static_cast<uint32_t>(tag & 7);
  return absl::OkStatus();
}

// Skips a field of `wire_type` whose value begins at `*pos` (its tag at
// `at`).
absl::Status Skip(const Reader& in, size_t* pos, size_t end, uint32_t field, uint32_t wire_type,
                  size_t at, const std::string& inside) {
  const auto past_end = [&](size_t need) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(field, at, inside), ": ", need, " bytes run past the end (", end - *pos, " left)"));
  };
  uint64_t length = 0;
  switch (wire_type) {
    case wire::kVarint:
      if (!in.Varint(pos, end, &length)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(field, at, inside), ": truncated varint"));
      }
      return absl::OkStatus();
    case wire::kFixed64:
      if (end - *pos < 8) return past_end(8);
      *pos += 8;
      return absl::OkStatus();
    case wire::kFixed32:
      if (end - *pos < 4) return past_end(4);
      *pos += 4;
      return absl::OkStatus();
    case wire::kLengthDelimited:
      if (!in.Varint(pos, end, &length)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(field, at, inside), ": truncated length"));
      }
      if (length > end - *pos) return past_end(length);
      *pos += length;
      return absl::OkStatus();
    case wire::kStartGroup:
    case wire::kEndGroup:
      return absl::InvalidArgumentError(absl::StrCat(Where(field, at, inside), ": wire type ",
                                                     wire_type, " (group) is not supported"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(Where(field, at, inside), ": wire type ", wire_type, " is not valid"));
  }
}

absl::Status WrongType(uint32_t field, size_t at, uint32_t got, uint32_t want,
                       const std::string& inside) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(field, at, inside), ": wire type ", got, ", expected ", want,
                   want == wire::kFixed64 ? " (64-bit)" : " (length-delimited)"));
}

// A double field's value at `*pos` (its tag at `at`).
absl::Status ReadDouble(const Reader& in, size_t* pos, size_t end, uint32_t field,
                        uint32_t wire_type, size_t at, const std::string& inside, double* out) {
  if (wire_type != wire::kFixed64) return WrongType(field, at, wire_type, wire::kFixed64, inside);
  if (end - *pos < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(field, at, inside), ": 8 bytes run past the end (", end - *pos, " left)"));
  }
  *out = in.Double(*pos);
  *pos += 8;
  return absl::OkStatus();
}

// A length-delimited value at `*pos`: its bounds [*begin, *pos) after.
absl::Status ReadLength(const Reader& in, size_t* pos, size_t end, uint32_t field,
                        uint32_t wire_type, size_t at, const std::string& inside, size_t* begin) {
  if (wire_type != wire::kLengthDelimited) {
    return WrongType(field, at, wire_type, wire::kLengthDelimited, inside);
  }
  uint64_t length = 0;
  if (!in.Varint(pos, end, &length)) {
    return absl::InvalidArgumentError(absl::StrCat(Where(field, at, inside), ": truncated length"));
  }
  if (length > end - *pos) {
    return absl::InvalidArgumentError(absl::StrCat(Where(field, at, inside), ": length ", length,
                                                   " runs past the end (", end - *pos,
                                                   " bytes left)"));
  }
  *begin = *pos;
  *pos += length;
  return absl::OkStatus();
}

// A map entry in [begin, end) of map field `map_field` (its tag at `at`)
// into `*map`.
absl::Status ReadEntry(const Reader& in, size_t begin, size_t end, uint32_t map_field, size_t at,
                       std::map<std::string, double>* map) {
  const std::string inside =
      absl::StrCat("field ", map_field, " (", FieldName(map_field), ") entry at byte ", at, ": ");
  std::string key;
  double value = 0;
  size_t pos = begin;
  while (pos < end) {
    const size_t tag_at = pos;
    uint32_t field = 0, wire_type = 0;
    if (absl::Status s = ReadTag(in, &pos, end, inside, &field, &wire_type); !s.ok()) return s;
    absl::Status s;
    if (field == wire::kEntryKey) {
      size_t key_begin = 0;
      s = ReadLength(in, &pos, end, field, wire_type, tag_at, inside, &key_begin);
      if (s.ok()) key.assign(in.Sub(key_begin, pos - key_begin).data(), pos - key_begin);
    } else if (field == wire::kEntryValue) {
      s = ReadDouble(in, &pos, end, field, wire_type, tag_at, inside, &value);
    } else {
      s = Skip(in, &pos, end, field, wire_type, tag_at, inside);
    }
    if (!s.ok()) return s;
  }
  (*map)[std::move(key)] = value;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadReport> ParseLoadReport(absl::string_view bytes) {
  LoadReport report;
  const Reader in(bytes);
  const size_t end = bytes.size();
  const std::string top;
  size_t pos = 0;
  while (pos < end) {
    const size_t at = pos;
    uint32_t field = 0, wire_type = 0;
    if (absl::Status s = ReadTag(in, &pos, end, top, &field, &wire_type); !s.ok()) return s;
    absl::Status s;
    switch (field) {
      case wire::kCpuUtilization:
        s = ReadDouble(in, &pos, end, field, wire_type, at, top, &report.cpu_utilization);
        break;
      case wire::kMemUtilization:
        s = ReadDouble(in, &pos, end, field, wire_type, at, top, &report.mem_utilization);
        break;
      case wire::kRpsFractional:
        s = ReadDouble(in, &pos, end, field, wire_type, at, top, &report.rps_fractional);
        break;
      case wire::kEps:
        s = ReadDouble(in, &pos, end, field, wire_type, at, top, &report.eps);
        break;
      case wire::kApplicationUtilization:
        s = ReadDouble(in, &pos, end, field, wire_type, at, top, &report.application_utilization);
        break;
      case wire::kRequestCost:
      case wire::kUtilization:
      case wire::kNamedMetrics: {
        size_t begin = 0;
        s = ReadLength(in, &pos, end, field, wire_type, at, top, &begin);
        if (!s.ok()) break;
        std::map<std::string, double>* map = field == wire::kRequestCost   ? &report.request_cost
                                             : field == wire::kUtilization ? &report.utilization
                                                                           : &report.named_metrics;
        s = ReadEntry(in, begin, pos, field, at, map);
        break;
      }
      default:
        s = Skip(in, &pos, end, field, wire_type, at, top);
        break;
    }
    if (!s.ok()) return s;
  }
  return report;
}

}  // namespace resilience
