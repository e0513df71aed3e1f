// PrintableText: what a request may put into a log line, a JSON string or
// the status page comes out as one line of valid UTF-8 (issue 40 item 11).

#include "src/metrics/printable_text.h"

#include <string>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(PrintableTextTest, PrintableTextIsUnchanged) {
  EXPECT_EQ(PrintableText::Escape("/cache.v1.CacheService/Get"), "/cache.v1.CacheService/Get");
  EXPECT_EQ(PrintableText::Escape("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \\x41"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \\x41");
  EXPECT_EQ(PrintableText::Escape(""), "");
}

TEST(PrintableTextTest, ControlCharactersAreEscaped) {
  // The admin request's "method=/a%0Acache_client: breaker FORGED".
  EXPECT_EQ(PrintableText::Escape("/a\ncache_client: breaker FORGED"),
            "/a\\ncache_client: breaker FORGED");
  EXPECT_EQ(PrintableText::Escape("a\rb\tc"), "a\\rb\\tc");
  EXPECT_EQ(PrintableText::Escape(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(PrintableText::Escape("\x1B[31mred\x7F"), "\\x1B[31mred\\x7F");
  // C1 controls (U+0085 NEXT LINE, U+009B CSI) are well-formed UTF-8 but
  // break lines or start terminal escapes.
  EXPECT_EQ(PrintableText::Escape("a\xC2\x85z\xC2\x9B"), "a\\xC2\\x85z\\xC2\\x9B");
  EXPECT_EQ(PrintableText::Escape("\xC2\xA0"), "\xC2\xA0");  // U+00A0 is text
}

TEST(PrintableTextTest, BytesThatAreNotUtf8AreEscaped) {
  // The admin request's "method=/a/%FF%FE".
  EXPECT_EQ(PrintableText::Escape("/a/\xFF\xFE"), "/a/\\xFF\\xFE");
  EXPECT_EQ(PrintableText::Escape("\xC0\xAF"), "\\xC0\\xAF");                    // overlong '/'
  EXPECT_EQ(PrintableText::Escape("\xED\xA0\x80"), "\\xED\\xA0\\x80");           // a surrogate
  EXPECT_EQ(PrintableText::Escape("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // > U+10FFFF
  EXPECT_EQ(PrintableText::Escape("ab\xE2\x82"), "ab\\xE2\\x82");                // cut short
  EXPECT_EQ(PrintableText::Escape("\x80z"), "\\x80z");  // stray continuation
}

TEST(PrintableTextTest, Utf8Length) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF";
  EXPECT_EQ(PrintableText::Utf8Length(text, 0), 1u);
  EXPECT_EQ(PrintableText::Utf8Length(text, 1), 2u);
  EXPECT_EQ(PrintableText::Utf8Length(text, 3), 3u);
  EXPECT_EQ(PrintableText::Utf8Length(text, 6), 4u);
  EXPECT_EQ(PrintableText::Utf8Length(text, 10), 0u);
  EXPECT_EQ(PrintableText::Utf8Length(text, 2), 0u);  // a continuation byte
}

}  // namespace
}  // namespace resilience
