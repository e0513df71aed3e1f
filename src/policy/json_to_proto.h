// File: src/policy/json_to_proto.h
//
// The policy file's message (resilience.v1.PolicyFile) filled from the one
// JSON tree the loader read (JsonScanner), after ShapeChecker accepted its
// shape: no second parse of the text.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/policy/json_value.h"

namespace google::protobuf {
class FieldDescriptor;
class Message;
class Value;
}  // namespace google::protobuf

namespace resilience {

// JsonToProto
//
// Sets the fields of a message from a JSON object as proto3's JSON mapping
// does (a field by its JSON or its proto name; numbers also as strings;
// durations as "1.5s"; google.protobuf.Struct free-form), with the messages
// of protobuf's own JSON parser, which users have seen: "policy JSON:
// <path>: <key>: Cannot find field." and "policy JSON: <path>: invalid value
// <value> for type TYPE_INT32". Like that parser it reads the whole tree and
// reports the last error in file order. The kinds of the values are
// ShapeChecker's to check first; a kind it let through that does not fit is
// reported as an invalid value.
//
// Fills google.protobuf.Struct maps: compiled without ThreadSanitizer
// (src/policy/CMakeLists.txt says why).
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
  // Sets `out`'s fields from `object` (a JSON object).
  static absl::Status Fill(const JsonValue& object, google::protobuf::Message& out);

 private:
  using FieldDescriptor = google::protobuf::FieldDescriptor;

  JsonToProto() = default;

  // The members of `object` onto `out`, whose JSON path is `path`.
  void Object(const JsonValue& object, google::protobuf::Message& out, const std::string& path);

  // One value of `field` (an element, if repeated), written under `key`.
  void One(const JsonValue& value, const FieldDescriptor& field, absl::string_view key,
           google::protobuf::Message& out, const std::string& path);

  // A number field's value, checked against the field's type.
  void Number(const JsonValue& value, const FieldDescriptor& field,
              google::protobuf::Message& out, const std::string& path);

  // A google.protobuf.Duration from "-?S(.F{1,9})?s".
  void Duration(const JsonValue& value, absl::string_view key, google::protobuf::Message& out,
                const std::string& path);

  // Any JSON value as a google.protobuf.Value.
  static void ToValue(const JsonValue& value, google::protobuf::Value& out);

  // Keeps `message` (after "policy JSON: "), replacing an earlier one.
  void Error(const std::string& path, absl::string_view message);

  absl::Status error_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_TO_PROTO_H_
