#include "src/metrics/printable_text.h"

#include "absl/strings/str_format.h"

namespace resilience {

size_t PrintableText::Utf8Length(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length;
  // The range the second byte must be in (RFC 3629, section 4): it rules
  // out overlong forms, surrogates and code points over U+10FFFF.
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

std::string PrintableText::Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t length = Utf8Length(text, i);
    // C1 controls (U+0080..U+009F) are 0xC2 0x80..0x9F.
    const bool c1 = length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (length == 1 && c >= 0x20 && c != 0x7F) {
      out += text[i];
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (length <= 1 || c1) {
      // A control character, or a byte that starts no character: each of
      // its bytes as \xHH.
      const size_t n = length == 0 ? 1 : length;
      for (size_t k = 0; k < n; ++k) {
        absl::StrAppendFormat(&out, "\\x%02X", static_cast<unsigned char>(text[i + k]));
      }
      i += n;
      continue;
    } else {
      out.append(text.data() + i, length);
    }
    i += length == 0 ? 1 : length;
  }
  return out;
}

}  // namespace resilience
