#include "src/policy/shape_checker.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/struct.pb.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/json_text.h"

namespace resilience {

using internal::JsonNumber;
using internal::Printable;

absl::Status ShapeChecker::Check(const google::protobuf::Value& root) {
  if (root.kind_case() != google::protobuf::Value::kStructValue) {
    return Mismatch("", "an object such as {\"methodConfig\": [...]}", root);
  }
  return Object(root.struct_value(), *v1::PolicyFile::descriptor(), "");
}

absl::Status ShapeChecker::Object(const google::protobuf::Struct& object,
                                  const google::protobuf::Descriptor& type, const std::string& path) {
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    const auto json = object.fields().find(field.json_name());
    const auto proto = field.name() == field.json_name() ? object.fields().end()
                                                         : object.fields().find(field.name());
    if (json != object.fields().end() && proto != object.fields().end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy JSON: ", path, path.empty() ? "" : ": ", "\"", field.json_name(),
          "\" and \"", field.name(), "\" are the same field; write it once, as \"",
          field.json_name(), "\""));
    }
    const auto it = json != object.fields().end() ? json : proto;
    if (it == object.fields().end()) continue;
    const std::string field_path = absl::StrCat(path, path.empty() ? "" : ".", it->first);
    const Value& value = it->second;
    if (value.kind_case() == Value::kNullValue) continue;  // as if left out
    if (!field.is_repeated()) {
      if (absl::Status s = One(value, field, field_path); !s.ok()) return s;
      continue;
    }
    if (value.kind_case() != Value::kListValue) return Mismatch(field_path, "an array", value);
    for (int k = 0; k < value.list_value().values_size(); ++k) {
      const std::string element_path = absl::StrCat(field_path, "[", k, "]");
      const Value& element = value.list_value().values(k);
      if (element.kind_case() == Value::kNullValue) {
        return Mismatch(element_path, Expected(field), element);
      }
      if (absl::Status s = One(element, field, element_path); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

std::string ShapeChecker::Expected(const FieldDescriptor& field) {
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
    case FieldDescriptor::TYPE_ENUM:
      return "a name";
    default:
      return "a number";
  }
}

absl::Status ShapeChecker::One(const Value& value, const FieldDescriptor& field,
                               const std::string& path) {
  const Value::KindCase kind = value.kind_case();
  switch (field.type()) {
    case FieldDescriptor::TYPE_MESSAGE: {
      const google::protobuf::Descriptor* type = field.message_type();
      if (type == google::protobuf::Duration::descriptor()) {
        if (kind != Value::kStringValue || !DurationText(value.string_value())) {
          return Mismatch(path, Expected(field), value);
        }
        return absl::OkStatus();
      }
      if (kind != Value::kStructValue) return Mismatch(path, Expected(field), value);
      if (type == google::protobuf::Struct::descriptor()) return absl::OkStatus();  // free-form
      return Object(value.struct_value(), *type, path);
    }
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
      if (kind != Value::kStringValue) return Mismatch(path, Expected(field), value);
      return absl::OkStatus();
    case FieldDescriptor::TYPE_BOOL:
      if (kind != Value::kBoolValue) return Mismatch(path, Expected(field), value);
      return absl::OkStatus();
    case FieldDescriptor::TYPE_ENUM:
      if (kind != Value::kStringValue && kind != Value::kNumberValue) {
        return Mismatch(path, Expected(field), value);
      }
      return absl::OkStatus();
    default: {  // numbers
      if (kind == Value::kNumberValue) return absl::OkStatus();
      // proto3 JSON also takes a number as a string, and "NaN",
      // "Infinity", "-Infinity" for floating point; protobuf checks the
      // range. Anything else (protobuf reads "0x1" as 1) is refused.
      const bool floating = field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
                            field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
      if (kind == Value::kStringValue) {
        const std::string& text = value.string_value();
        if (JsonNumber(text, nullptr) ||
            (floating && (text == "NaN" || text == "Infinity" || text == "-Infinity"))) {
          return absl::OkStatus();
        }
      }
      return Mismatch(path, Expected(field), value);
    }
  }
}

bool ShapeChecker::DurationText(absl::string_view text) {
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

std::string ShapeChecker::Describe(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNullValue:
      return "null";
    case Value::kBoolValue:
      return value.bool_value() ? "true" : "false";
    case Value::kNumberValue:
      return absl::StrCat(value.number_value());
    case Value::kStringValue:
      return absl::StrCat("\"", Printable(value.string_value(), 64), "\"");
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "an array";
    default:
      return "nothing";
  }
}

absl::Status ShapeChecker::Mismatch(const std::string& path, absl::string_view expected,
                                    const Value& value) {
  return absl::InvalidArgumentError(absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ",
                                                 "expected ", expected, ", got ",
                                                 Describe(value)));
}

}  // namespace resilience
