// File: src/metrics/status_json.h
//
// A small streaming JSON writer for the status report: commas placed by
// itself, strings escaped (RFC 8259) and made valid UTF-8 whatever they
// hold, non-finite numbers written as null.

#ifndef GRPC_RESILIENCE_SRC_METRICS_STATUS_JSON_H_
#define GRPC_RESILIENCE_SRC_METRICS_STATUS_JSON_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "src/metrics/printable_text.h"

namespace resilience {

// JsonWriter
//
// Begin/End must nest; Key() only inside an object, before each value.
// Not thread-safe (one writer per document).
class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(absl::string_view key) {
    Separate();
    AppendString(key);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(absl::string_view value) {
    Separate();
    AppendString(value);
    return *this;
  }
  JsonWriter& Number(double value) {
    Separate();
    if (std::isfinite(value)) {
      absl::StrAppendFormat(&out_, "%.6g", value);
    } else {
      out_ += "null";
    }
    return *this;
  }
  JsonWriter& Number(int64_t value) {
    Separate();
    absl::StrAppend(&out_, value);
    return *this;
  }
  JsonWriter& Number(int value) { return Number(static_cast<int64_t>(value)); }
  JsonWriter& Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    out_ += "null";
    return *this;
  }
  JsonWriter& Optional(const std::optional<double>& value) {
    return value.has_value() ? Number(*value) : Null();
  }

  // The document; the writer is empty afterwards.
  std::string Take() { return std::move(out_); }

 private:
  JsonWriter& Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  // A comma before every value or key but the first of its container; none
  // between a key and its value.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  // Each byte that starts no well-formed UTF-8 character (a request's
  // "%FF%FE") is written as the text \xHH, as PrintableText writes it: the
  // document stays valid UTF-8 JSON.
  void AppendString(absl::string_view s) {
    out_ += '"';
    for (size_t i = 0; i < s.size(); ++i) {
      const char ch = s[i];
      const unsigned char c = static_cast<unsigned char>(ch);
      if (c >= 0x80) {
        const size_t length = PrintableText::Utf8Length(s, i);
        if (length == 0) {
          absl::StrAppendFormat(&out_, "\\\\x%02X", c);
        } else {
          out_.append(s.data() + i, length);
          i += length - 1;
        }
        continue;
      }
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (c < 0x20) {
            absl::StrAppendFormat(&out_, "\\u%04x", c);
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_STATUS_JSON_H_
