#include "src/policy/struct_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "src/policy/json_text.h"

namespace resilience::internal {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string Describe(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNullValue: return "null";
    case Value::kBoolValue: return value.bool_value() ? "true" : "false";
    case Value::kNumberValue: return ShortestJsonNumber(value.number_value());
    case Value::kStringValue:
      return absl::StrCat("\"", Printable(value.string_value(), 64), "\"");
    case Value::kStructValue: return "an object";
    case Value::kListValue: return "an array";
    default: return "nothing";
  }
}

absl::Status Bad(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string ToJson(const Value& value) {
  switch (value.kind_case()) {
    case Value::kBoolValue: return value.bool_value() ? "true" : "false";
    case Value::kNumberValue: return ShortestJsonNumber(value.number_value());
    case Value::kStringValue: return QuoteJson(value.string_value());
    case Value::kStructValue: {
      std::vector<std::string> keys;
      for (const auto& [key, unused] : value.struct_value().fields()) keys.push_back(key);
      std::sort(keys.begin(), keys.end());
      std::vector<std::string> members;
      for (const std::string& key : keys) {
        members.push_back(
            absl::StrCat(QuoteJson(key), ": ", ToJson(value.struct_value().fields().at(key))));
      }
      return absl::StrCat("{", absl::StrJoin(members, ", "), "}");
    }
    case Value::kListValue: {
      std::vector<std::string> elements;
      for (const Value& v : value.list_value().values()) elements.push_back(ToJson(v));
      return absl::StrCat("[", absl::StrJoin(elements, ", "), "]");
    }
    default: return "null";
  }
}

absl::Status OnlyFields(const Struct& object, const std::string& path, absl::string_view owner,
                        std::initializer_list<absl::string_view> known) {
  std::vector<std::string> keys;
  for (const auto& [key, unused] : object.fields()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    return Bad(absl::StrCat(path, ".", Printable(key, 64)),
               absl::StrCat("not a field of ", owner,
                            known.size() == 0
                                ? " (it has none)"
                                : absl::StrCat(" (", absl::StrJoin(known, ", "), ")")));
  }
  return absl::OkStatus();
}

absl::Status Duration(const Struct& object, const std::string& path, absl::string_view name,
                      int64_t max_seconds, absl::Duration* out) {
  auto it = object.fields().find(std::string(name));
  if (it == object.fields().end()) return absl::OkStatus();
  const std::string field_path = absl::StrCat(path, ".", name);
  const Value& v = it->second;
  const absl::string_view hint = " (gRPC wants seconds and an \"s\", e.g. \"0.5s\")";
  absl::string_view text = v.string_value();  // "" when not a string: refused below
  bool ok = absl::ConsumeSuffix(&text, "s") && !text.empty();
  absl::string_view whole = text, fraction;
  if (const size_t dot = text.find('.'); ok && dot != absl::string_view::npos) {
    whole = text.substr(0, dot);
    fraction = text.substr(dot + 1);
    ok = !fraction.empty() && fraction.size() <= 9;
  }
  auto digits = [](absl::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
  };
  int64_t seconds = 0;
  ok = ok && !whole.empty() && whole.size() <= 12 && digits(whole) && digits(fraction) &&
       absl::SimpleAtoi(whole, &seconds);
  if (!ok) return Bad(field_path, absl::StrCat(Describe(v), " is not a duration", hint));
  const bool whole_seconds = fraction.find_first_not_of('0') == absl::string_view::npos;
  if ((seconds == 0 && whole_seconds) || seconds > max_seconds ||
      (seconds == max_seconds && !whole_seconds)) {
    return Bad(field_path, absl::StrCat("must be in (0s, ", max_seconds, "s], got ", Describe(v)));
  }
  if (out != nullptr) {
    int64_t nanos = 0;
    std::string digits9(fraction);
    digits9.resize(9, '0');
    if (!fraction.empty() && !absl::SimpleAtoi(digits9, &nanos)) nanos = 0;
    *out = absl::Seconds(seconds) + absl::Nanoseconds(nanos);
  }
  return absl::OkStatus();
}

absl::Status Integer(const Struct& object, const std::string& path, absl::string_view name,
                     uint64_t low, uint64_t high, uint64_t* out) {
  auto it = object.fields().find(std::string(name));
  if (it == object.fields().end()) return absl::OkStatus();
  const Value& v = it->second;
  const double d = v.kind_case() == Value::kNumberValue ? v.number_value() : -1;
  if (v.kind_case() != Value::kNumberValue || !(d >= static_cast<double>(low)) ||
      !(d <= static_cast<double>(high)) || std::floor(d) != d) {
    return Bad(absl::StrCat(path, ".", name),
               absl::StrCat("must be an integer in [", low, ", ", high, "], got ", Describe(v)));
  }
  if (out != nullptr) *out = static_cast<uint64_t>(d);
  return absl::OkStatus();
}

}  // namespace resilience::internal
