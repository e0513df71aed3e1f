// File: src/metrics/printable_text.h
//
// Text that came from outside (a method name in an admin request, a file's
// path) made safe where the library renders it: one log line, a JSON
// string, an HTML page.

#ifndef GRPC_RESILIENCE_SRC_METRICS_PRINTABLE_TEXT_H_
#define GRPC_RESILIENCE_SRC_METRICS_PRINTABLE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace resilience {

// PrintableText
//
// Stateless; thread-safe.
class PrintableText {
 public:
  // Escape()
  //
  // `text` with every control character (C0, DEL, C1) and every byte that is
  // not part of well-formed UTF-8 written as \xHH (\n, \r and \t as such):
  // the result is valid UTF-8 without a line break or a terminal escape, so
  // a request cannot forge a log line ("...%0Acache_client: breaker FORGED")
  // or make a JSON document invalid ("%FF%FE"). Printable text, including
  // every other character of UTF-8, is unchanged.
  static std::string Escape(absl::string_view text);

  // Utf8Length()
  //
  // The length (1 to 4) of the well-formed UTF-8 sequence that starts at
  // text[i], or 0 when none does there (a stray continuation byte, an
  // overlong form, a surrogate, a code point over U+10FFFF, a sequence cut
  // short). Requires i < text.size().
  static size_t Utf8Length(absl::string_view text, size_t i);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_PRINTABLE_TEXT_H_
