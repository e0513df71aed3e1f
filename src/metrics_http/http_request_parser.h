// File: src/metrics_http/http_request_parser.h
//
// The HTTP/1.x request the metrics endpoint reads: a request line, headers
// and a body of a Content-Length, parsed from the bytes received so far, so
// that the connection loop knows when a request is whole without a thread
// waiting on the socket.

#ifndef GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_REQUEST_PARSER_H_
#define GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_REQUEST_PARSER_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace resilience {

// A whole request as received.
struct ParsedHttpRequest {
  std::string method;   // "GET"
  std::string path;     // "/metrics", as sent (not URL-decoded)
  std::string query;    // after '?', still URL-encoded
  std::string version;  // "HTTP/1.1"
  // Names lower-cased, values trimmed, in the order sent.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header named `name` (lower case), or nullopt.
  std::optional<absl::string_view> Header(absl::string_view name) const;
};

// HttpRequestParser
//
// Stateless; thread-safe.
class HttpRequestParser {
 public:
  // Largest request head (request line and headers) and body accepted.
  static constexpr size_t kMaxHeadBytes = 16 * 1024;
  static constexpr size_t kMaxBodyBytes = 64 * 1024;

  struct Result {
    enum class Kind {
      kIncomplete,  // more bytes are needed
      kComplete,    // `request` holds it
      kBad,         // answer `status` with `message` and close
    };
    Kind kind = Kind::kIncomplete;
    ParsedHttpRequest request;
    int status = 0;
    std::string message;
    // kIncomplete: the head is whole and asked for "Expect: 100-continue".
    bool wants_continue = false;
  };

  // Parse()
  //
  // What `received` (every byte of the connection so far) holds: a whole
  // request, not yet one, or one that is refused (400 malformed, 411 a
  // chunked body, 413 a body over kMaxBodyBytes, 431 a head over
  // kMaxHeadBytes, 505 not HTTP/1.x), with a message saying what was wrong.
  static Result Parse(absl::string_view received);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_REQUEST_PARSER_H_
