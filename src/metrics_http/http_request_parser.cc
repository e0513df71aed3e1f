#include "src/metrics_http/http_request_parser.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace resilience {
namespace {

using Result = HttpRequestParser::Result;

Result Bad(int status, std::string message) {
  Result r;
  r.kind = Result::Kind::kBad;
  r.status = status;
  r.message = std::move(message);
  return r;
}

// A token character of RFC 9110 (method and header names).
bool IsToken(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (absl::ascii_isalnum(c)) continue;
    if (absl::string_view("!#$%&'*+-.^_`|~").find(c) == absl::string_view::npos) return false;
  }
  return true;
}

}  // namespace

std::optional<absl::string_view> ParsedHttpRequest::Header(absl::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return absl::string_view(v);
  }
  return std::nullopt;
}

Result HttpRequestParser::Parse(absl::string_view received) {
  const size_t end = received.find("\r\n\r\n");
  if (end == absl::string_view::npos) {
    if (received.size() > kMaxHeadBytes) {
      return Bad(431, absl::StrCat("request head over ", kMaxHeadBytes, " bytes"));
    }
    return Result{};
  }
  if (end > kMaxHeadBytes) {
    return Bad(431, absl::StrCat("request head over ", kMaxHeadBytes, " bytes"));
  }
  Result r;
  ParsedHttpRequest& q = r.request;
  const std::vector<absl::string_view> lines = absl::StrSplit(received.substr(0, end), "\r\n");
  const std::vector<absl::string_view> parts = absl::StrSplit(lines[0], ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || parts[1].empty() || parts[1][0] != '/') {
    return Bad(400, "malformed request line (expected \"METHOD /path HTTP/1.1\")");
  }
  if (!absl::StartsWith(parts[2], "HTTP/1.")) {
    return Bad(505, absl::StrCat("HTTP version \"", parts[2], "\" not supported: HTTP/1.x only"));
  }
  q.method = std::string(parts[0]);
  q.version = std::string(parts[2]);
  const size_t question = parts[1].find('?');
  q.path = std::string(parts[1].substr(0, question));
  if (question != absl::string_view::npos) q.query = std::string(parts[1].substr(question + 1));
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos || !IsToken(lines[i].substr(0, colon))) {
      return Bad(400, "malformed header line (expected \"Name: value\")");
    }
    q.headers.emplace_back(absl::AsciiStrToLower(lines[i].substr(0, colon)),
                           std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  if (q.Header("transfer-encoding").has_value()) {
    return Bad(411, "a body must come with a Content-Length (Transfer-Encoding not accepted)");
  }
  std::optional<size_t> given;
  for (const auto& [name, value] : q.headers) {
    if (name != "content-length") continue;
    size_t this_one = 0;
    if (value.empty() || !absl::ascii_isdigit(value[0]) || !absl::SimpleAtoi(value, &this_one) ||
        (given.has_value() && this_one != *given)) {
      return Bad(400, absl::StrCat("bad Content-Length \"", value, "\""));
    }
    given = this_one;
  }
  const size_t length = given.value_or(0);
  if (length > kMaxBodyBytes) {
    return Bad(413, absl::StrCat("body of ", length, " bytes, over ", kMaxBodyBytes));
  }
  const absl::string_view rest = received.substr(end + 4);
  if (rest.size() < length) {
    const std::optional<absl::string_view> expect = q.Header("expect");
    r.wants_continue = expect.has_value() && absl::EqualsIgnoreCase(*expect, "100-continue");
    r.kind = Result::Kind::kIncomplete;
    r.request = ParsedHttpRequest();
    return r;
  }
  q.body = std::string(rest.substr(0, length));
  r.kind = Result::Kind::kComplete;
  return r;
}

}  // namespace resilience
