#include "src/policy/json_to_proto.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using internal::JsonNumber;
using internal::Printable;
using Kind = JsonValue::Kind;

// The longest duration protobuf accepts: 10,000 years.
constexpr int64_t kMaxDurationSeconds = 315576000000;

// A JSON number as protobuf's parser reads it: a whole number without '.'
// or exponent that fits 64 bits stays an integer, anything else is a double.
struct NumberToken {
  enum { kInt, kUint, kDouble } kind = kDouble;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

NumberToken ReadNumber(absl::string_view text) {
  NumberToken t;
  if (text.find_first_of(".eE") == absl::string_view::npos) {
    if (absl::StartsWith(text, "-") ? absl::SimpleAtoi(text, &t.i) : absl::SimpleAtoi(text, &t.u)) {
      t.kind = absl::StartsWith(text, "-") ? NumberToken::kInt : NumberToken::kUint;
      return t;
    }
  }
  (void)absl::SimpleAtod(text, &t.d);
  return t;
}

// A double as protobuf shows one: 15 digits when they read back, else 17.
std::string ShowDouble(double d) {
  std::string shown = absl::StrFormat("%.15g", d);
  double back = 0;
  if (absl::SimpleAtod(shown, &back) && back == d) return shown;
  return absl::StrFormat("%.17g", d);
}

std::string ShowNumber(const NumberToken& t) {
  switch (t.kind) {
    case NumberToken::kInt:
      return absl::StrCat(t.i);
    case NumberToken::kUint:
      return absl::StrCat(t.u);
    default:
      return ShowDouble(t.d);
  }
}

// `t` as an integer of type T, when it is one in T's range.
template <typename T>
bool ToInteger(const NumberToken& t, T* out) {
  using Limits = std::numeric_limits<T>;
  if (t.kind == NumberToken::kInt) {
    if (t.i < static_cast<int64_t>(Limits::min()) ||
        (t.i > 0 && static_cast<uint64_t>(t.i) > static_cast<uint64_t>(Limits::max()))) {
      return false;
    }
    *out = static_cast<T>(t.i);
    return true;
  }
  if (t.kind == NumberToken::kUint) {
    if (t.u > static_cast<uint64_t>(Limits::max())) return false;
    *out = static_cast<T>(t.u);
    return true;
  }
  // max() + 1 is a power of two, exact as a double.
  if (!(t.d >= static_cast<double>(Limits::min()) &&
        t.d < static_cast<double>(Limits::max()) + 1.0)) {
    return false;
  }
  *out = static_cast<T>(t.d);
  return static_cast<double>(*out) == t.d;
}

// A number field's value written as a string: an integer in T's range (no
// sign on an unsigned one), as protobuf's safe_strto* reads it.
template <typename T>
bool IntegerFromString(const std::string& text, T* out) {
  if (!std::numeric_limits<T>::is_signed && absl::StartsWith(text, "-")) return false;
  return absl::SimpleAtoi(text, out);
}

template <typename T>
bool ToInteger(const JsonValue& value, T* out) {
  return value.kind == Kind::kString ? IntegerFromString(value.text, out)
                                     : ToInteger(ReadNumber(value.text), out);
}

bool ToDouble(const JsonValue& value, double* out) {
  if (value.kind == Kind::kNumber) {
    const NumberToken t = ReadNumber(value.text);
    *out = t.kind == NumberToken::kInt    ? static_cast<double>(t.i)
           : t.kind == NumberToken::kUint ? static_cast<double>(t.u)
                                          : t.d;
    return true;
  }
  if (value.text == "NaN") *out = std::numeric_limits<double>::quiet_NaN();
  else if (value.text == "Infinity") *out = std::numeric_limits<double>::infinity();
  else if (value.text == "-Infinity") *out = -std::numeric_limits<double>::infinity();
  else return absl::SimpleAtod(value.text, out) && std::isfinite(*out);
  return true;
}

std::string Expected(const FieldDescriptor& field) {
  switch (field.type()) {
    case FieldDescriptor::TYPE_MESSAGE:
      if (field.message_type() == google::protobuf::Duration::descriptor()) {
        return "a duration such as \"0.2s\" (seconds with up to 9 decimals, then s)";
      }
      return "an object";
    case FieldDescriptor::TYPE_STRING:
      return "a string";
    case FieldDescriptor::TYPE_BOOL:
      return "true or false";
    default:
      return "a number";
  }
}

bool NumberLike(const JsonValue& value, const FieldDescriptor& field) {
  if (value.kind == Kind::kNumber) return true;
  // proto3 JSON also takes a number as a string, and "NaN", "Infinity",
  // "-Infinity" for floating point; protobuf checks the range. Anything
  // else (protobuf reads "0x1" as 1) is refused.
  const bool floating = field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
                        field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
  const std::string& text = value.text;
  return value.kind == Kind::kString &&
         (JsonNumber(text, nullptr) ||
          (floating && (text == "NaN" || text == "Infinity" || text == "-Infinity")));
}

// -?[0-9]+(\.[0-9]{1,9})?s: the duration form protobuf writes; its parser
// also reads " 1s", "+1s" and "1.s". Range is checked later.
bool DurationText(absl::string_view text) {
  if (!absl::ConsumeSuffix(&text, "s")) return false;
  absl::ConsumePrefix(&text, "-");
  const size_t dot = text.find('.');
  const absl::string_view seconds = text.substr(0, dot);
  const auto all_digits = [](absl::string_view d) {
    return !d.empty() && std::all_of(d.begin(), d.end(), absl::ascii_isdigit);
  };
  if (!all_digits(seconds)) return false;
  if (dot == absl::string_view::npos) return true;
  const absl::string_view fraction = text.substr(dot + 1);
  return all_digits(fraction) && fraction.size() <= 9;
}

// `value` as a message shows it: null, true, 3, "text", an object...
std::string Describe(const JsonValue& value) {
  switch (value.kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return value.text;
    case Kind::kNumber: {
      double number = 0;
      if (!absl::SimpleAtod(value.text, &number)) return value.text;
      return absl::StrCat(number);
    }
    case Kind::kString:
      return absl::StrCat("\"", Printable(value.text, 64), "\"");
    case Kind::kObject:
      return "an object";
    case Kind::kArray:
      return "an array";
  }
  return "nothing";
}

}  // namespace

absl::Status JsonToProto::Fill(const JsonValue& root, v1::PolicyFile& out) {
  JsonToProto filler;
  if (root.kind != Kind::kObject) {
    filler.Mismatch("", "an object such as {\"methodConfig\": [...]}", root);
  } else {
    filler.Object(root, out, "");
  }
  return filler.shape_error_.ok() ? filler.error_ : filler.shape_error_;
}

void JsonToProto::Object(const JsonValue& object, Message& out, const std::string& path) {
  const google::protobuf::Descriptor& type = *out.GetDescriptor();
  for (const JsonValue::Member& member : object.members) {
    int index = 0;
    while (index < type.field_count() && type.field(index)->json_name() != member.key &&
           type.field(index)->name() != member.key) {
      ++index;
    }
    if (index == type.field_count()) {
      Error(path, absl::StrCat(member.key, ": Cannot find field."));
      continue;
    }
    const FieldDescriptor& field = *type.field(index);
    order_.push_back(index);
    if (member.key == field.json_name() && field.name() != field.json_name() &&
        object.Find(field.name()) != nullptr) {
      Shape(absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ", "\"", field.json_name(),
                         "\" and \"", field.name(), "\" are the same field; write it once, as \"",
                         field.json_name(), "\""));
    } else if (member.value.kind != Kind::kNull) {  // null: as if left out
      Field(member.value, field, member.key, out, absl::StrCat(path, path.empty() ? "" : ".",
                                                               member.key));
    }
    order_.pop_back();
  }
}

void JsonToProto::Field(const JsonValue& value, const FieldDescriptor& field,
                        absl::string_view key, Message& out, const std::string& path) {
  if (!field.is_repeated()) return One(value, field, key, out, path);
  if (value.kind != Kind::kArray) return Mismatch(path, "an array", value);
  for (size_t k = 0; k < value.elements.size(); ++k) {
    order_.push_back(static_cast<int>(k));
    const std::string element_path = absl::StrCat(path, "[", k, "]");
    const JsonValue& element = value.elements[k];
    if (element.kind == Kind::kNull) {
      Mismatch(element_path, Expected(field), element);
    } else {
      One(element, field, key, out, element_path);
    }
    order_.pop_back();
  }
}

void JsonToProto::One(const JsonValue& value, const FieldDescriptor& field, absl::string_view key,
                      Message& out, const std::string& path) {
  const Reflection& r = *out.GetReflection();
  bool ok = true;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (field.message_type() == google::protobuf::Duration::descriptor()) {
        if ((ok = value.kind == Kind::kString && DurationText(value.text))) {
          Duration(value, key, *r.MutableMessage(&out, &field), path);
        }
      } else if ((ok = value.kind == Kind::kObject)) {
        Message& child = field.is_repeated() ? *r.AddMessage(&out, &field)
                                             : *r.MutableMessage(&out, &field);
        Nested(value, child, path);
      }
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      if ((ok = value.kind == Kind::kString)) {
        field.is_repeated() ? r.AddString(&out, &field, value.text)
                            : r.SetString(&out, &field, value.text);
      }
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      if ((ok = value.kind == Kind::kBool)) r.SetBool(&out, &field, value.text == "true");
      break;
    default:
      if ((ok = NumberLike(value, field))) Number(value, field, out, path);
  }
  if (!ok) Mismatch(path, Expected(field), value);
}

void JsonToProto::Nested(const JsonValue& value, Message& child, const std::string& path) {
  auto* free_form = google::protobuf::DynamicCastToGenerated<google::protobuf::Struct>(&child);
  if (free_form == nullptr) return Object(value, child, path);
  for (const JsonValue::Member& m : value.members) {
    ToValue(m.value, (*free_form->mutable_fields())[m.key]);
  }
}

void JsonToProto::Number(const JsonValue& value, const FieldDescriptor& field, Message& out,
                         const std::string& path) {
  const Reflection& r = *out.GetReflection();
  // Converts the value to `v`'s type and sets it with `setter`.
  const auto set = [&](auto v, auto setter) {
    const bool ok = ToInteger(value, &v);
    if (ok) (r.*setter)(&out, &field, v);
    return ok;
  };
  bool ok = false;
  double d = 0;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: ok = set(int32_t{0}, &Reflection::SetInt32); break;
    case FieldDescriptor::CPPTYPE_INT64: ok = set(int64_t{0}, &Reflection::SetInt64); break;
    case FieldDescriptor::CPPTYPE_UINT32: ok = set(uint32_t{0}, &Reflection::SetUInt32); break;
    case FieldDescriptor::CPPTYPE_UINT64: ok = set(uint64_t{0}, &Reflection::SetUInt64); break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if ((ok = ToDouble(value, &d))) r.SetDouble(&out, &field, d);
      break;
    default:
      break;  // no field of the schema has another type
  }
  if (ok) return;
  const std::string shown = value.kind == Kind::kString
                                ? absl::StrCat("\"", value.text, "\"")
                                : ShowNumber(ReadNumber(value.text));
  Error(path, absl::StrCat("invalid value ", shown, " for type TYPE_",
                           absl::AsciiStrToUpper(field.type_name())));
}

void JsonToProto::Duration(const JsonValue& value, absl::string_view key, Message& out,
                           const std::string& path) {
  absl::string_view text = value.text;
  absl::ConsumeSuffix(&text, "s");
  const bool negative = absl::ConsumePrefix(&text, "-");
  const size_t dot = text.find('.');
  int64_t seconds = 0;
  std::string fraction(dot == absl::string_view::npos ? "" : text.substr(dot + 1));
  fraction.resize(9, '0');
  int32_t nanos = 0;
  const auto fail = [&](absl::string_view why) {
    Error(path, absl::StrCat("invalid value Field '", key, "', ", why,
                             " for type type.googleapis.com/google.protobuf.Duration"));
  };
  if (!absl::SimpleAtoi(text.substr(0, dot), &seconds) || !absl::SimpleAtoi(fraction, &nanos)) {
    return fail("Invalid duration format, failed to parse seconds");
  }
  if (seconds > kMaxDurationSeconds) return fail("Duration value exceeds limits");
  auto& d = static_cast<google::protobuf::Duration&>(out);
  d.set_seconds(negative ? -seconds : seconds);
  d.set_nanos(negative ? -nanos : nanos);
}

void JsonToProto::ToValue(const JsonValue& value, google::protobuf::Value& out) {
  switch (value.kind) {
    case Kind::kNull:
      out.set_null_value(google::protobuf::NULL_VALUE);
      return;
    case Kind::kBool:
      out.set_bool_value(value.text == "true");
      return;
    case Kind::kNumber: {
      double d = 0;
      ToDouble(value, &d);
      out.set_number_value(d);
      return;
    }
    case Kind::kString:
      out.set_string_value(value.text);
      return;
    case Kind::kObject:
      for (const JsonValue::Member& m : value.members) {
        ToValue(m.value, (*out.mutable_struct_value()->mutable_fields())[m.key]);
      }
      out.mutable_struct_value();  // {} too
      return;
    case Kind::kArray:
      out.mutable_list_value();  // [] too
      for (const JsonValue& element : value.elements) {
        ToValue(element, *out.mutable_list_value()->add_values());
      }
      return;
  }
}

void JsonToProto::Mismatch(const std::string& path, absl::string_view expected,
                           const JsonValue& value) {
  Shape(absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ", "expected ", expected,
                     ", got ", Describe(value)));
}

void JsonToProto::Shape(std::string message) {
  if (!shape_error_.ok() && !(order_ < shape_order_)) return;
  shape_error_ = absl::InvalidArgumentError(message);
  shape_order_ = order_;
}

void JsonToProto::Error(const std::string& path, absl::string_view message) {
  // protobuf named the path with JSON names, however the file wrote them.
  std::string line = absl::StrCat("policy JSON: ", internal::SnakeToCamel(path),
                                  path.empty() ? "" : ": ", message);
  line.resize(std::min(line.size(), line.find('\n')));  // the first line, as protobuf's showed
  error_ = absl::InvalidArgumentError(Printable(line, line.size()));
}

}  // namespace resilience
