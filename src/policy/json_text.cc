#include "src/policy/json_text.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace resilience::internal {

std::string Printable(absl::string_view text, size_t max_bytes) {
  std::string shown;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      shown.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&shown, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  if (text.size() > max_bytes) shown += "...";
  return shown;
}

std::string Position(absl::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat("line ", line, ", column ", column);
}

size_t FirstInvalidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length;
    if (c < 0x80) {
      length = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return absl::string_view::npos;
}

bool JsonNumber(absl::string_view number, bool* empty_fraction) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < number.size() && absl::ascii_isdigit(number[i])) ++i;
    return i - from;
  };
  if (i < number.size() && number[i] == '-') ++i;
  if (i < number.size() && number[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < number.size() && number[i] == '.') {
    ++i;
    if (digits() == 0) {
      if (empty_fraction == nullptr) return false;
      *empty_fraction = true;
    }
  }
  if (i < number.size() && (number[i] == 'e' || number[i] == 'E')) {
    ++i;
    if (i < number.size() && (number[i] == '+' || number[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == number.size();
}

std::string SnakeToCamel(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const bool joins = text[i] == '_' && i > 0 && i + 1 < text.size() &&
                       (absl::ascii_islower(text[i - 1]) || absl::ascii_isdigit(text[i - 1])) &&
                       absl::ascii_islower(text[i + 1]);
    if (joins) {
      out.push_back(absl::ascii_toupper(text[++i]));
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string QuoteJson(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string ShortestJsonNumber(double v) {
  // Whole numbers in full ("100", not "1e+02"): gRPC reads its integer
  // fields only so.
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  for (int precision = 1; precision < 17; ++precision) {
    std::string s = absl::StrFormat("%.*g", precision, v);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return absl::StrFormat("%.17g", v);
}

std::string GrpcJsonDuration(absl::Duration d) {
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  const int64_t seconds = nanos / 1000000000;
  const int64_t fraction = nanos % 1000000000;
  if (fraction == 0) return absl::StrCat("\"", seconds, "s\"");
  std::string digits = absl::StrFormat("%09d", fraction);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return absl::StrCat("\"", seconds, ".", digits, "s\"");
}

}  // namespace resilience::internal
