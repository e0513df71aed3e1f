#include "src/policy/json_scanner.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"

namespace resilience {

using internal::JsonNumber;
using internal::Position;
using internal::Printable;

absl::Status JsonScanner::Check() {
  SkipSpace();
  if (!Value()) return error_;
  while (true) {
    SkipSpace();
    if (frames_.empty()) return absl::OkStatus();  // what follows is protobuf's to report
    Frame& top = frames_.back();
    if (At(',')) {
      const size_t comma = pos_++;
      SkipSpace();
      if (At(']') || At('}')) {
        return Fail(comma, frames_.size() - 1, "trailing comma (not allowed in JSON)");
      }
      if (top.object) {
        if (!Key()) return error_;
      } else {
        ++top.index;
      }
      if (!Value()) return error_;
    } else if (At(top.object ? '}' : ']')) {
      ++pos_;
      frames_.pop_back();
    } else {
      return absl::OkStatus();
    }
  }
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

absl::Status JsonScanner::Fail(size_t offset, size_t levels, absl::string_view what) {
  Stop(offset, levels, what);
  return error_;
}

bool JsonScanner::Key() {
  Frame& top = frames_.back();
  const size_t levels = frames_.size() - 1;  // the object's own path
  const size_t start = pos_;
  if (At('"')) {
    std::string key;
    if (!String(&key, levels)) return false;
    if (auto [it, inserted] = top.seen.emplace(key, start); !inserted) {
      return Stop(start, levels,
                  absl::StrCat("duplicate key \"", Printable(key, 40), "\" (first at ",
                               Position(text_, it->second), ")"));
    }
    top.key = std::move(key);
  } else if (At('\'')) {
    return Stop(start, levels, "single-quoted key (JSON strings use double quotes)");
  } else if (pos_ < text_.size() && (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_' ||
                                     text_[pos_] == '$')) {
    size_t end = pos_;
    while (end < text_.size() &&
           (absl::ascii_isalnum(text_[end]) || text_[end] == '_' || text_[end] == '$')) {
      ++end;
    }
    return Stop(start, levels,
                absl::StrCat("unquoted key ", Printable(text_.substr(pos_, end - pos_), 40),
                             " (JSON keys are strings in double quotes)"));
  } else {
    return false;  // not JSON: protobuf says what
  }
  SkipSpace();
  if (!At(':')) return false;
  ++pos_;
  SkipSpace();
  return true;
}

bool JsonScanner::Value() {
  const size_t start = pos_;
  const size_t levels = frames_.size();  // the value's own path
  if (pos_ >= text_.size()) return NotAValue(levels);
  const char c = text_[pos_];
  if (c == '{' || c == '[') {
    if (frames_.size() >= static_cast<size_t>(kMaxDepth)) {
      return Stop(start, levels,
                  absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
    }
    ++pos_;
    frames_.emplace_back();
    frames_.back().object = c == '{';
    SkipSpace();
    if (At(c == '{' ? '}' : ']')) {  // empty
      ++pos_;
      frames_.pop_back();
      return true;
    }
    return c == '{' ? Key() && Value() : Value();
  }
  if (c == '"') return String(nullptr, levels);
  if (c == '\'') {
    return Stop(start, levels, "single-quoted string (JSON strings use double quotes)");
  }
  if (c == '-' || absl::ascii_isdigit(c)) return Number(levels);
  if (absl::ascii_isalpha(c)) {
    size_t end = pos_;
    while (end < text_.size() && absl::ascii_isalnum(text_[end])) ++end;
    const absl::string_view word = text_.substr(pos_, end - pos_);
    if (word != "true" && word != "false" && word != "null") return NotAValue(levels);
    pos_ = end;
    return true;
  }
  return NotAValue(levels);
}

bool JsonScanner::NotAValue(size_t levels) {
  const std::string found = pos_ >= text_.size()
                                ? std::string("the end of the text")
                                : absl::StrCat("\"", Printable(text_.substr(pos_), 12), "\"");
  return Stop(pos_, levels,
              absl::StrCat("expected a value (object, array, string, number, true, false or "
                           "null), found ",
                           found));
}

bool JsonScanner::Number(size_t levels) {
  const size_t start = pos_;
  size_t end = pos_;
  while (end < text_.size() && (absl::ascii_isdigit(text_[end]) || text_[end] == '-' ||
                                text_[end] == '+' || text_[end] == '.' ||
                                text_[end] == 'e' || text_[end] == 'E')) {
    ++end;
  }
  const absl::string_view number = text_.substr(start, end - start);
  bool empty_fraction = false;
  if (!JsonNumber(number, &empty_fraction)) return false;
  if (empty_fraction) {
    return Stop(start, levels,
                absl::StrCat("invalid number ", number,
                             " (JSON wants a digit after the decimal point)"));
  }
  pos_ = end;
  return true;
}

bool JsonScanner::String(std::string* out, size_t levels) {
  ++pos_;  // the opening quote
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
      if (out != nullptr) out->push_back(static_cast<char>(c));
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= text_.size()) return false;
    const char e = text_[pos_ + 1];
    static constexpr absl::string_view kSimple = "\"\\/bfnrt";
    static constexpr absl::string_view kMeaning = "\"\\/\b\f\n\r\t";
    if (const size_t k = kSimple.find(e); k != absl::string_view::npos) {
      if (out != nullptr) out->push_back(kMeaning[k]);
      pos_ += 2;
    } else if (e == 'u') {
      uint32_t unit;
      if (!Hex4(pos_ + 2, &unit)) return false;
      pos_ += 6;
      uint32_t code_point = unit;
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        uint32_t low;
        if (!(At('\\') && pos_ + 1 < text_.size() && text_[pos_ + 1] == 'u' &&
              Hex4(pos_ + 2, &low) && low >= 0xDC00 && low <= 0xDFFF)) {
          return false;  // a lone surrogate: protobuf refuses it
        }
        pos_ += 6;
        code_point = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
        return false;
      }
      if (out != nullptr) AppendUtf8(code_point, *out);
    } else {
      return Stop(pos_, levels,
                  absl::StrCat("invalid escape \\", Printable(absl::string_view(&e, 1), 1),
                               " in a string"));
    }
  }
  return false;  // unterminated
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
