// File: src/policy/json_scanner.h
//
// A strict JSON (RFC 8259) check of a policy file's text, run before
// protobuf's parser, which accepts more than JSON.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace resilience {

// JsonScanner
//
// Reads the text as strict JSON (RFC 8259) before protobuf's parser does,
// and refuses what that parser would accept although it is not JSON or is
// ambiguous: trailing commas, single-quoted strings, unquoted keys,
// "1." numbers, unknown escapes and raw control characters in strings, a key
// twice in one object (protobuf keeps the last, or merges two objects), and
// nesting deeper than kMaxDepth. Each with the JSON path and the position.
// At anything else that is not JSON it stops without a verdict: protobuf's
// parser then reports that syntax error as before.
//
// Algorithm: one pass over the text with a stack of the objects and arrays
// open (at most kMaxDepth), each with the member or element being read and,
// for objects, the keys seen so far. Recursion (into the first member of a
// value just opened) goes no deeper than kMaxDepth.
//
// Example:
//   if (absl::Status s = JsonScanner(text).Check(); !s.ok()) return s;
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

  // Check()
  //
  // OK when the text is strict JSON up to where protobuf's parser has
  // something to say (or to its end); otherwise InvalidArgument "policy
  // JSON: <path>: <what> at line L, column C". Call it once.
  absl::Status Check();

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
  // Stop(), returning the error.
  absl::Status Fail(size_t offset, size_t levels, absl::string_view what);

  // An object member's key and its ':'. On a key met before, stops.
  bool Key();

  // One value; an object or array is opened (and its first member read), the
  // loop in Check() goes on with the rest.
  bool Value();
  // Stops at a byte that starts no JSON value (or at the end of the text),
  // showing what is there.
  bool NotAValue(size_t levels);

  // A number: RFC 8259's grammar. protobuf also takes "1." and "1.e5";
  // those stop here, other malformed numbers are protobuf's to report.
  bool Number(size_t levels);

  // A double-quoted string; decoded into `out` when not null (keys).
  bool String(std::string* out, size_t levels);

  // Four hex digits at `at`, as a UTF-16 code unit.
  bool Hex4(size_t at, uint32_t* value) const;

  // Appends code point `cp` to `out`, UTF-8 encoded.
  static void AppendUtf8(uint32_t cp, std::string& out);

  const absl::string_view text_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;
  absl::Status error_;  // set when a scan stops with a verdict
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_SCANNER_H_
