#include "src/policy/shape_checker.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
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
using Kind = JsonValue::Kind;

absl::Status ShapeChecker::Check(const JsonValue& root) {
  if (root.kind != Kind::kObject) {
    return Mismatch("", "an object such as {\"methodConfig\": [...]}", root);
  }
  return Object(root, *v1::PolicyFile::descriptor(), "");
}

absl::Status ShapeChecker::Object(const Value& object, const google::protobuf::Descriptor& type,
                                  const std::string& path) {
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    const Value* json = object.Find(field.json_name());
    const Value* proto = field.name() == field.json_name() ? nullptr : object.Find(field.name());
    if (json != nullptr && proto != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy JSON: ", path, path.empty() ? "" : ": ", "\"", field.json_name(),
          "\" and \"", field.name(), "\" are the same field; write it once, as \"",
          field.json_name(), "\""));
    }
    const Value* value = json != nullptr ? json : proto;
    if (value == nullptr || value->kind == Kind::kNull) continue;  // null: as if left out
    const std::string field_path = absl::StrCat(path, path.empty() ? "" : ".",
                                                json != nullptr ? field.json_name() : field.name());
    absl::Status s = field.is_repeated() ? Repeated(*value, field, field_path)
                                         : One(*value, field, field_path);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ShapeChecker::Repeated(const Value& value, const FieldDescriptor& field,
                                    const std::string& path) {
  if (value.kind != Kind::kArray) return Mismatch(path, "an array", value);
  for (size_t k = 0; k < value.elements.size(); ++k) {
    const std::string element_path = absl::StrCat(path, "[", k, "]");
    const Value& element = value.elements[k];
    if (element.kind == Kind::kNull) return Mismatch(element_path, Expected(field), element);
    if (absl::Status s = One(element, field, element_path); !s.ok()) return s;
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
  bool ok = false;
  switch (field.type()) {
    case FieldDescriptor::TYPE_MESSAGE: {
      const google::protobuf::Descriptor* type = field.message_type();
      if (type == google::protobuf::Duration::descriptor()) {
        ok = value.kind == Kind::kString && DurationText(value.text);
      } else if (value.kind == Kind::kObject) {
        if (type == google::protobuf::Struct::descriptor()) return absl::OkStatus();  // free-form
        return Object(value, *type, path);
      }
      break;
    }
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
      ok = value.kind == Kind::kString;
      break;
    case FieldDescriptor::TYPE_BOOL:
      ok = value.kind == Kind::kBool;
      break;
    case FieldDescriptor::TYPE_ENUM:
      ok = value.kind == Kind::kString || value.kind == Kind::kNumber;
      break;
    default:
      ok = NumberLike(value, field);
  }
  return ok ? absl::OkStatus() : Mismatch(path, Expected(field), value);
}

bool ShapeChecker::NumberLike(const Value& value, const FieldDescriptor& field) {
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

absl::Status ShapeChecker::Mismatch(const std::string& path, absl::string_view expected,
                                    const Value& value) {
  return absl::InvalidArgumentError(absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ",
                                                 "expected ", expected, ", got ",
                                                 Describe(value)));
}

}  // namespace resilience
