// File: src/policy/json_value.h
//
// A policy file's JSON as the loader reads it, once (JsonScanner::Parse()):
// the tree every later step walks, each value with where it starts in the
// text, for messages.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_VALUE_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_VALUE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace resilience {

// JsonValue
//
// One JSON value: its kind, its byte offset in the text, and its content.
// Objects keep their members in file order (a key is there once: the
// scanner refuses duplicates). Plain data; thread-compatible.
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kObject, kArray };
  struct Member;

  Kind kind = Kind::kNull;
  size_t offset = 0;
  // kString: decoded; kNumber: as written; kBool: "true" or "false".
  std::string text;
  std::vector<Member> members;    // kObject
  std::vector<JsonValue> elements;  // kArray

  // The member named `key` of an object, or null.
  const JsonValue* Find(absl::string_view key) const;
};

struct JsonValue::Member {
  std::string key;
  JsonValue value;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_VALUE_H_
