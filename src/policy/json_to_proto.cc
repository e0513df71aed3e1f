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
#include "src/policy/json_text.h"

namespace resilience {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
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

}  // namespace

absl::Status JsonToProto::Fill(const JsonValue& object, Message& out) {
  JsonToProto filler;
  filler.Object(object, out, "");
  return filler.error_;
}

void JsonToProto::Object(const JsonValue& object, Message& out, const std::string& path) {
  const google::protobuf::Descriptor& type = *out.GetDescriptor();
  for (const JsonValue::Member& member : object.members) {
    const FieldDescriptor* field = nullptr;
    for (int i = 0; i < type.field_count() && field == nullptr; ++i) {
      const FieldDescriptor* f = type.field(i);
      if (f->json_name() == member.key || f->name() == member.key) field = f;
    }
    if (field == nullptr) {
      Error(path, absl::StrCat(member.key, ": Cannot find field."));
      continue;
    }
    if (member.value.kind == Kind::kNull) continue;  // as if left out
    const std::string field_path =
        absl::StrCat(path, path.empty() ? "" : ".", field->json_name());
    if (!field->is_repeated()) {
      One(member.value, *field, member.key, out, field_path);
      continue;
    }
    for (size_t k = 0; k < member.value.elements.size(); ++k) {
      One(member.value.elements[k], *field, member.key, out,
          absl::StrCat(field_path, "[", k, "]"));
    }
  }
}

void JsonToProto::One(const JsonValue& value, const FieldDescriptor& field, absl::string_view key,
                      Message& out, const std::string& path) {
  const Reflection& r = *out.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      Message& child = field.is_repeated() ? *r.AddMessage(&out, &field)
                                           : *r.MutableMessage(&out, &field);
      if (field.message_type() == google::protobuf::Duration::descriptor()) {
        Duration(value, key, child, path);
      } else if (auto* s =
                     google::protobuf::DynamicCastToGenerated<google::protobuf::Struct>(&child)) {
        for (const JsonValue::Member& m : value.members) {
          ToValue(m.value, (*s->mutable_fields())[m.key]);
        }
      } else {
        Object(value, child, path);
      }
      return;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      field.is_repeated() ? r.AddString(&out, &field, value.text)
                          : r.SetString(&out, &field, value.text);
      return;
    case FieldDescriptor::CPPTYPE_BOOL:
      r.SetBool(&out, &field, value.text == "true");
      return;
    default:
      Number(value, field, out, path);
  }
}

void JsonToProto::Number(const JsonValue& value, const FieldDescriptor& field, Message& out,
                         const std::string& path) {
  const Reflection& r = *out.GetReflection();
  bool ok = false;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v = 0;
      if ((ok = ToInteger(value, &v))) r.SetInt32(&out, &field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      if ((ok = ToInteger(value, &v))) r.SetInt64(&out, &field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      if ((ok = ToInteger(value, &v))) r.SetUInt32(&out, &field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      if ((ok = ToInteger(value, &v))) r.SetUInt64(&out, &field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v = 0;
      if ((ok = ToDouble(value, &v))) r.SetDouble(&out, &field, v);
      break;
    }
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

void JsonToProto::Error(const std::string& path, absl::string_view message) {
  std::string line = absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ", message);
  line.resize(std::min(line.size(), line.find('\n')));  // the first line, as protobuf's showed
  error_ = absl::InvalidArgumentError(internal::Printable(line, line.size()));
}

}  // namespace resilience
