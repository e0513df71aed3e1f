// File: src/policy/json_text.h
//
// Small functions on the text of a policy file that the loader's checks
// share (JsonScanner, JsonToProto, PolicyTable): how to show a piece of it in
// a one-line message, where a byte is, whether a string is a JSON number,
// and the step from proto field names to JSON names. Pure functions, no
// state: thread-safe.

#ifndef GRPC_RESILIENCE_SRC_POLICY_JSON_TEXT_H_
#define GRPC_RESILIENCE_SRC_POLICY_JSON_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace resilience::internal {

// Printable()
//
// `text` with every byte that is not printable ASCII shown as \xNN, cut to
// `max_bytes` of input (then "..." follows): safe to put in a one-line
// message whatever the file held.
std::string Printable(absl::string_view text, size_t max_bytes);

// Position()
//
// "line L, column C" of byte `offset` of `text` (both from 1).
std::string Position(absl::string_view text, size_t offset);

// FirstInvalidUtf8()
//
// The offset of the first byte of `text` that does not start a well-formed
// UTF-8 sequence (by lead byte and continuation bytes), or npos.
size_t FirstInvalidUtf8(absl::string_view text);

// JsonNumber()
//
// Whether `number` is a JSON number:
//   -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// With `empty_fraction` not null, a "." without digits passes and sets
// *empty_fraction (protobuf's parser reads "1." as 1; the caller refuses it
// with its own message).
bool JsonNumber(absl::string_view number, bool* empty_fraction);

// SnakeToCamel()
//
// "max_drop_probability" -> "maxDropProbability" wherever a lower-case
// letter or digit, '_' and a lower-case letter meet; other text is left
// alone. Turns proto field names (and the core's option names, which follow
// them) into the file's JSON names inside a message.
std::string SnakeToCamel(absl::string_view text);

// QuoteJson()
//
// `s` as a JSON string, quotes included (control characters escaped).
std::string QuoteJson(absl::string_view s);

// ShortestJsonNumber()
//
// The shortest decimal form of finite `v` that reads back as `v` ("0.5",
// "1e-05"); whole numbers below 1e15 in full ("100").
std::string ShortestJsonNumber(double v);

// GrpcJsonDuration()
//
// `d` (in [0, 30 days]) as gRPC's service config writes a duration, quotes
// included: seconds with up to nine decimals and an "s" ("\"0.05s\"").
std::string GrpcJsonDuration(absl::Duration d);

}  // namespace resilience::internal

#endif  // GRPC_RESILIENCE_SRC_POLICY_JSON_TEXT_H_
