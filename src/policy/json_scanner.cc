#include "src/policy/json_scanner.h"

#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"

namespace resilience {

using internal::JsonNumber;
using internal::Position;
using internal::Printable;

const JsonValue* JsonValue::Find(absl::string_view key) const {
  for (const Member& m : members) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

absl::StatusOr<JsonValue> JsonScanner::Parse() {
  JsonValue root;
  SkipSpace();
  if (!Value(root)) return error_;
  SkipSpace();
  if (pos_ < text_.size()) {
    Stop(pos_, 0, absl::StrCat("unexpected ", Found(), " after the end of the JSON value"));
    return error_;
  }
  return root;
}

void JsonScanner::SkipSpace() {
  while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                 text_[pos_] == '\n' || text_[pos_] == '\r')) {
    ++pos_;
  }
}

std::string JsonScanner::Path(size_t levels) const {
  std::string path;
  for (size_t i = 0; i < levels && i < frames_.size(); ++i) {
    if (frames_[i].object) {
      absl::StrAppend(&path, path.empty() ? "" : ".", Printable(frames_[i].key, 40));
    } else {
      absl::StrAppend(&path, "[", frames_[i].index, "]");
    }
  }
  return path;
}

bool JsonScanner::Stop(size_t offset, size_t levels, absl::string_view what) {
  const std::string path = Path(levels);
  error_ = absl::InvalidArgumentError(absl::StrCat(
      "policy JSON: ", path, path.empty() ? "" : ": ", what, " at ", Position(text_, offset)));
  return false;
}

std::string JsonScanner::Found() const {
  if (pos_ >= text_.size()) return "the end of the text";
  return absl::StrCat("\"", Printable(text_.substr(pos_), 12), "\"");
}

bool JsonScanner::Key(std::string& key) {
  Frame& top = frames_.back();
  const size_t levels = frames_.size() - 1;  // the object's own path
  const size_t start = pos_;
  if (At('\'')) return Stop(start, levels, "single-quoted key (JSON strings use double quotes)");
  if (pos_ < text_.size() &&
      (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_' || text_[pos_] == '$')) {
    size_t end = pos_;
    while (end < text_.size() &&
           (absl::ascii_isalnum(text_[end]) || text_[end] == '_' || text_[end] == '$')) {
      ++end;
    }
    return Stop(start, levels,
                absl::StrCat("unquoted key ", Printable(text_.substr(pos_, end - pos_), 40),
                             " (JSON keys are strings in double quotes)"));
  }
  if (!At('"')) {
    return Stop(start, levels, absl::StrCat("expected a key in double quotes, found ", Found()));
  }
  if (!String(key, levels)) return false;
  if (auto [it, inserted] = top.seen.emplace(key, start); !inserted) {
    return Stop(start, levels,
                absl::StrCat("duplicate key \"", Printable(key, 40), "\" (first at ",
                             Position(text_, it->second), ")"));
  }
  top.key = key;
  SkipSpace();
  if (!At(':')) {
    return Stop(pos_, levels, absl::StrCat("expected ':' after the key, found ", Found()));
  }
  ++pos_;
  SkipSpace();
  return true;
}

bool JsonScanner::Value(JsonValue& out) {
  const size_t start = pos_;
  const size_t levels = frames_.size();  // the value's own path
  out.offset = start;
  if (pos_ >= text_.size()) return NotAValue(levels);
  const char c = text_[pos_];
  if (c == '{' || c == '[') return Container(out, c == '{');
  if (c == '"') {
    out.kind = JsonValue::Kind::kString;
    return String(out.text, levels);
  }
  if (c == '\'') {
    return Stop(start, levels, "single-quoted string (JSON strings use double quotes)");
  }
  if (c == '-' || absl::ascii_isdigit(c)) {
    out.kind = JsonValue::Kind::kNumber;
    return Number(out.text, levels);
  }
  size_t end = pos_;
  while (end < text_.size() && absl::ascii_isalnum(text_[end])) ++end;
  const absl::string_view word = text_.substr(pos_, end - pos_);
  if (word == "null") {
    out.kind = JsonValue::Kind::kNull;
  } else if (word == "true" || word == "false") {
    out.kind = JsonValue::Kind::kBool;
    out.text = std::string(word);
  } else {
    return NotAValue(levels);
  }
  pos_ = end;
  return true;
}

bool JsonScanner::Container(JsonValue& out, bool object) {
  if (frames_.size() >= static_cast<size_t>(kMaxDepth)) {
    return Stop(pos_, frames_.size(), absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
  }
  const char close = object ? '}' : ']';
  out.kind = object ? JsonValue::Kind::kObject : JsonValue::Kind::kArray;
  ++pos_;
  frames_.emplace_back();
  frames_.back().object = object;
  SkipSpace();
  if (!At(close)) {
    while (true) {
      if (!Item(out)) return false;
      SkipSpace();
      if (At(close)) break;
      if (!At(',')) {
        return Stop(pos_, frames_.size() - 1,
                    absl::StrCat("expected ',' or '", std::string(1, close), "', found ", Found()));
      }
      const size_t comma = pos_++;
      SkipSpace();
      if (At(']') || At('}')) {
        return Stop(comma, frames_.size() - 1, "trailing comma (not allowed in JSON)");
      }
      if (!object) ++frames_.back().index;
    }
  }
  ++pos_;
  frames_.pop_back();
  return true;
}

bool JsonScanner::Item(JsonValue& container) {
  if (container.kind == JsonValue::Kind::kArray) {
    container.elements.emplace_back();
    return Value(container.elements.back());
  }
  JsonValue::Member member;
  if (!Key(member.key) || !Value(member.value)) return false;
  container.members.push_back(std::move(member));
  return true;
}

bool JsonScanner::NotAValue(size_t levels) {
  return Stop(pos_, levels,
              absl::StrCat("expected a value (object, array, string, number, true, false or "
                           "null), found ",
                           Found()));
}

bool JsonScanner::Number(std::string& out, size_t levels) {
  const size_t start = pos_;
  size_t end = pos_;
  while (end < text_.size() && (absl::ascii_isdigit(text_[end]) || text_[end] == '-' ||
                                text_[end] == '+' || text_[end] == '.' ||
                                text_[end] == 'e' || text_[end] == 'E')) {
    ++end;
  }
  const absl::string_view number = text_.substr(start, end - start);
  bool empty_fraction = false;
  if (!JsonNumber(number, &empty_fraction)) {
    return Stop(start, levels, absl::StrCat("invalid number ", Printable(number, 40)));
  }
  if (empty_fraction) {
    return Stop(start, levels,
                absl::StrCat("invalid number ", number,
                             " (JSON wants a digit after the decimal point)"));
  }
  if (double d = 0; !absl::SimpleAtod(number, &d) || !std::isfinite(d)) {
    return Stop(start, levels,
                absl::StrCat("number ", Printable(number, 40), " exceeds the range of double"));
  }
  out = std::string(number);
  pos_ = end;
  return true;
}

bool JsonScanner::String(std::string& out, size_t levels) {
  const size_t start = pos_++;  // the opening quote
  while (pos_ < text_.size()) {
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (c < 0x20) {
      return Stop(pos_, levels,
                  absl::StrCat("raw control character \\x", absl::Hex(c, absl::kZeroPad2),
                               " in a string (JSON wants it escaped)"));
    }
    if (c != '\\') {
      out.push_back(static_cast<char>(c));
      ++pos_;
    } else if (!Escape(out, levels)) {
      return false;
    }
  }
  return Stop(start, levels, "unterminated string");
}

bool JsonScanner::Escape(std::string& out, size_t levels) {
  if (pos_ + 1 >= text_.size()) return Stop(pos_, levels, "unterminated string");
  const char e = text_[pos_ + 1];
  static constexpr absl::string_view kSimple = "\"\\/bfnrt";
  static constexpr absl::string_view kMeaning = "\"\\/\b\f\n\r\t";
  if (const size_t k = kSimple.find(e); k != absl::string_view::npos) {
    out.push_back(kMeaning[k]);
    pos_ += 2;
    return true;
  }
  if (e != 'u') {
    return Stop(pos_, levels,
                absl::StrCat("invalid escape \\", Printable(absl::string_view(&e, 1), 1),
                             " in a string"));
  }
  uint32_t unit;
  if (!Hex4(pos_ + 2, &unit)) {
    return Stop(pos_, levels, "invalid escape \\u in a string (wants four hex digits)");
  }
  const size_t at = pos_;
  pos_ += 6;
  uint32_t code_point = unit;
  uint32_t low = 0;
  if (unit >= 0xD800 && unit <= 0xDBFF && At('\\') && pos_ + 1 < text_.size() &&
      text_[pos_ + 1] == 'u' && Hex4(pos_ + 2, &low) && low >= 0xDC00 && low <= 0xDFFF) {
    pos_ += 6;
    code_point = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
  } else if (unit >= 0xD800 && unit <= 0xDFFF) {
    return Stop(at, levels, "unpaired surrogate escape in a string (not valid UTF-16)");
  }
  AppendUtf8(code_point, out);
  return true;
}

bool JsonScanner::Hex4(size_t at, uint32_t* value) const {
  if (at + 4 > text_.size()) return false;
  *value = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const char h = text_[i];
    if (!absl::ascii_isxdigit(h)) return false;
    *value = *value * 16 + (absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10);
  }
  return true;
}

void JsonScanner::AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace resilience
