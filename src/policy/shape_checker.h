// File: src/policy/shape_checker.h
//
// The shape of a policy file's JSON checked against the PolicyFile schema,
// where protobuf's JSON parser would quietly reinterpret a value.

#ifndef GRPC_RESILIENCE_SRC_POLICY_SHAPE_CHECKER_H_
#define GRPC_RESILIENCE_SRC_POLICY_SHAPE_CHECKER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "src/policy/json_value.h"

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
}  // namespace google::protobuf

namespace resilience {

// ShapeChecker
//
// Walks the JSON (the JsonScanner's tree) against the
// PolicyFile schema (proto/resilience/v1/policy.proto) and refuses a value
// of the wrong kind where protobuf's parser would quietly reinterpret it: a
// single value or nested arrays where an array belongs (it flattens them),
// null inside an array (it drops it), "true" for a bool, an object for a
// duration (it reads {"seconds": 5}), a duration string it reads leniently
// (" 1s", "+1s", "1.s"), a number string it reads as hex ("0x1") and a field
// written under both its JSON and its proto name (it merges them). Fields in
// schema order, so the first mismatch reported does not depend on hashing.
// Keys the schema does not know are left to protobuf's parser. Recursion is
// bounded by the schema's depth.
//
// Example:
//   if (absl::Status s = ShapeChecker::Check(value); !s.ok()) return s;
//
// Thread-safety: stateless; Check() may run on any number of threads.
class ShapeChecker {
 public:
  ShapeChecker() = delete;

  // Check()
  //
  // OK when every value of `root` has the kind its field wants; otherwise
  // InvalidArgument "policy JSON: <path>: expected <kind>, got <value>"
  // (the value made printable and cut short), the first in schema order.
  static absl::Status Check(const JsonValue& root);

 private:
  using FieldDescriptor = google::protobuf::FieldDescriptor;
  using Value = JsonValue;

  // The fields of `type` in `object`, at `path`.
  static absl::Status Object(const Value& object, const google::protobuf::Descriptor& type,
                             const std::string& path);

  // A repeated field's value: an array of values of its kind, none null.
  static absl::Status Repeated(const Value& value, const FieldDescriptor& field,
                               const std::string& path);

  // What a single value of `field` must look like.
  static std::string Expected(const FieldDescriptor& field);

  // One value of `field` (an element, if repeated), not null.
  static absl::Status One(const Value& value, const FieldDescriptor& field,
                          const std::string& path);
  // A number field's value: a number, or a string protobuf reads as one.
  static bool NumberLike(const Value& value, const FieldDescriptor& field);

  // -?[0-9]+(\.[0-9]{1,9})?s: the duration form protobuf writes; its parser
  // also reads " 1s", "+1s" and "1.s". Range is checked later.
  static bool DurationText(absl::string_view text);

  // `value` as a message shows it: null, true, 3, "text", an object...
  static std::string Describe(const Value& value);

  static absl::Status Mismatch(const std::string& path, absl::string_view expected,
                               const Value& value);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_SHAPE_CHECKER_H_
