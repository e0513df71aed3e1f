// File: src/policy/json_to_proto.h
//
// The policy file's message (resilience.v1.PolicyFile) from the one JSON
// tree the loader read (JsonScanner), with the shape of every value checked
// against the schema on the way: no second parse of the text.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/policy/json_value.h"

namespace google::protobuf {
class FieldDescriptor;
class Message;
class Value;
}  // namespace google::protobuf

namespace resilience {
namespace v1 {
class PolicyFile;
}  // namespace v1

// JsonToProto
//
// Walks the tree against the PolicyFile schema (proto/resilience/v1/
// policy.proto) and sets the fields as proto3's JSON mapping does (a field
// by its JSON or its proto name; numbers also as strings; durations as
// "1.5s"; google.protobuf.Struct free-form). Two kinds of error:
//
// - Shapes: a value of the wrong kind where protobuf's parser would
//   quietly reinterpret it: a single value or nested arrays where an array
//   belongs (it flattens them), null inside an array (it drops it), "true"
//   for a bool, an object for a duration (it reads {"seconds": 5}), a
//   duration string it reads leniently (" 1s", "+1s", "1.s"), a number
//   string it reads as hex ("0x1"), a field written under both its JSON and
//   its proto name (it merges them). "policy JSON: <path>: expected <kind>,
//   got <value>"; the first in schema order wins, so that it does not depend
//   on how the file orders its keys.
// - What protobuf's own parser refused, in its words, which users have
//   seen: "policy JSON: <path>: <key>: Cannot find field." and "policy JSON:
//   <path>: invalid value <value> for type TYPE_INT32"; as that parser, the
//   last in file order. Reported only when no shape is wrong.
//
// Fills google.protobuf.Struct maps: compiled without ThreadSanitizer
// (src/policy/CMakeLists.txt says why). Recursion is bounded by the schema.
//
// Example:
//   v1::PolicyFile file;
//   if (absl::Status s = JsonToProto::Fill(tree, file); !s.ok()) return s;
//
// Thread-safety: an instance is one fill, used by one thread.
class JsonToProto {
 public:
  // Fill()
  //
  // Sets `out`'s fields from `root`, which must be an object.
  static absl::Status Fill(const JsonValue& root, v1::PolicyFile& out);

 private:
  using FieldDescriptor = google::protobuf::FieldDescriptor;
  using Message = google::protobuf::Message;

  JsonToProto() = default;

  // The members of `object` onto `out`; `path` is the JSON path as written.
  void Object(const JsonValue& object, Message& out, const std::string& path);
  // The value of `field`, written under `key`: an array when repeated.
  void Field(const JsonValue& value, const FieldDescriptor& field, absl::string_view key,
             Message& out, const std::string& path);
  // One value of `field` (an element, if repeated), not null.
  void One(const JsonValue& value, const FieldDescriptor& field, absl::string_view key,
           Message& out, const std::string& path);
  // An object into a message field's `child`: a schema message, or Struct.
  void Nested(const JsonValue& value, Message& child, const std::string& path);
  // A number field's value, checked against the field's type.
  void Number(const JsonValue& value, const FieldDescriptor& field, Message& out,
              const std::string& path);
  // A google.protobuf.Duration from "-?S(.F{1,9})?s".
  void Duration(const JsonValue& value, absl::string_view key, Message& out,
                const std::string& path);
  // Any JSON value as a google.protobuf.Value.
  static void ToValue(const JsonValue& value, google::protobuf::Value& out);

  // A shape error: expected `expected`, got `value`.
  void Mismatch(const std::string& path, absl::string_view expected, const JsonValue& value);
  // Keeps the shape error `message` when it comes first in schema order.
  void Shape(std::string message);
  // Keeps `message` (after "policy JSON: " and the path), replacing an
  // earlier one.
  void Error(const std::string& path, absl::string_view message);

  // Where the walk is, in schema order: the field index or element index
  // of each level.
  std::vector<int> order_;
  std::vector<int> shape_order_;
  absl::Status shape_error_;
  absl::Status error_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_
