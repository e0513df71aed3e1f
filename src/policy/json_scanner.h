// File: src/policy/json_scanner.h
//
// The one parse of a policy file's text: strict JSON (RFC 8259) into a
// JsonValue tree that carries positions.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/policy/json_value.h"

namespace resilience {

// JsonScanner
//
// Reads the text as strict JSON (RFC 8259) into a JsonValue, and refuses
// what protobuf's parser would accept although it is not JSON or is
// ambiguous: trailing commas, single-quoted strings, unquoted keys,
// "1." numbers, unknown escapes and raw control characters in strings, a key
// twice in one object (protobuf keeps the last, or merges two objects), and
// nesting deeper than kMaxDepth. Each error names the JSON path and the
// position: "policy JSON: <path>: <what> at line L, column C".
//
// Algorithm: recursive descent, as deep as the nesting (at most kMaxDepth),
// with a stack of the objects and arrays open, each with the member or
// element being read (for the path) and, for objects, the keys seen so far.
//
// Example:
//   absl::StatusOr<JsonValue> tree = JsonScanner(text).Parse();
//   if (!tree.ok()) return tree.status();
//
// Thread-safety: an instance is one scan, used by one thread; `text` must
// outlive it.
class JsonScanner {
 public:
  // Deepest nesting of objects and arrays accepted. protobuf's parser turns
  // the text into nested messages (three for an object held in a
  // google.protobuf.Value) and gives up at 100 of them, with a message that
  // names nothing; 32 levels stay below that whatever the mix.
  static constexpr int kMaxDepth = 32;

  explicit JsonScanner(absl::string_view text) : text_(text) {}

  JsonScanner(const JsonScanner&) = delete;
  JsonScanner& operator=(const JsonScanner&) = delete;

  // Parse()
  //
  // The tree of the whole text, or InvalidArgument "policy JSON: <path>:
  // <what> at line L, column C" for the first thing that is not strict JSON.
  // Call it once.
  absl::StatusOr<JsonValue> Parse();

 private:
  // An object or array being read.
  struct Frame {
    bool object = false;
    int64_t index = 0;                              // array: the element being read
    std::string key;                                // object: the member being read, decoded
    absl::flat_hash_map<std::string, size_t> seen;  // object: key -> its offset
  };

  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void SkipSpace();

  // The JSON path of the value the first `levels` frames lead to.
  std::string Path(size_t levels) const;

  // Stops the scan with `what` at byte `offset`, in the value at the path of
  // the first `levels` frames. Returns false, to be returned.
  bool Stop(size_t offset, size_t levels, absl::string_view what);

  // An object member's key and its ':'. On a key met before, stops.
  bool Key(std::string& key);

  // One value, into `out`.
  bool Value(JsonValue& out);
  // An object or array, its '{' or '[' at pos_.
  bool Container(JsonValue& out, bool object);
  // One member or element of the container on top of the stack.
  bool Item(JsonValue& container);
  // What is at pos_, for a message: a few bytes of it, or the end.
  std::string Found() const;
  // Stops at a byte that starts no JSON value (or at the end of the text),
  // showing what is there.
  bool NotAValue(size_t levels);

  // A number: RFC 8259's grammar, kept as written in `out`.
  bool Number(std::string& out, size_t levels);

  // A double-quoted string, decoded into `out`.
  bool String(std::string& out, size_t levels);
  // The escape at pos_ (a backslash), decoded onto `out`.
  bool Escape(std::string& out, size_t levels);

  // Four hex digits at `at`, as a UTF-16 code unit.
  bool Hex4(size_t at, uint32_t* value) const;

  // Appends code point `cp` to `out`, UTF-8 encoded.
  static void AppendUtf8(uint32_t cp, std::string& out);

  const absl::string_view text_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;
  absl::Status error_;  // set when the scan stops
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_
