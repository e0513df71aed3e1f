// File: src/metrics_http/operations_routes.h
//
// What the metrics endpoint answers on the status page's and the admin
// endpoint's paths, apart from HTTP itself: a request in, a response out,
// so that the rules (who may force a breaker, which fields an admin request
// needs, how the rates are computed) are tested without sockets.

#ifndef GRPC_RESILIENCE_SRC_METRICS_HTTP_OPERATIONS_ROUTES_H_
#define GRPC_RESILIENCE_SRC_METRICS_HTTP_OPERATIONS_ROUTES_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/metrics_http.h"
#include "src/core/mutex.h"

namespace resilience {

// A request as the listener parsed it (HttpListener).
struct HttpRequest {
  std::string method;          // "GET", "POST", ...
  std::string path;            // without the query string
  std::string query;           // after '?', still URL-encoded
  std::string body;            // a form body (POST), URL-encoded
  std::string content_type;    // of the body
  std::string peer_address;    // "127.0.0.1", "::1", ...
  int peer_port = 0;
  std::string authorization;   // the Authorization header's value
  // What a browser says of the page behind a request (empty when absent):
  std::string host;            // the Host header ("127.0.0.1:9464")
  std::string origin;          // the Origin header ("http://evil.example")
  std::string sec_fetch_site;  // Sec-Fetch-Site ("cross-site", "same-origin", ...)
  bool admin_header = false;   // an "X-Resilience-Admin" header was sent
  int server_port = 0;         // the port the request came in on
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// OperationsRoutes
//
// /status, /status.json and /admin/breaker (MetricsHttpServer's comment
// says what each answers). Thread-safe: status requests are rendered one at
// a time (they share the previous report, for the rates); admin requests
// run concurrently.
class OperationsRoutes {
 public:
  static constexpr absl::string_view kStatusPath = "/status";
  static constexpr absl::string_view kStatusJsonPath = "/status.json";
  static constexpr absl::string_view kAdminBreakerPath = "/admin/breaker";
  static constexpr absl::string_view kAdminEnforcementPath = "/admin/enforcement";

  explicit OperationsRoutes(const MetricsHttpServer::Options& options);

  // The answer for `request`, or nullopt when its path is none of these
  // (or its feature is off): the caller answers 404.
  std::optional<HttpResponse> Handle(const HttpRequest& request);

  // Whether `address` is a loopback address (127.0.0.0/8, ::1, and IPv4
  // loopback mapped into IPv6).
  static bool IsLoopback(absl::string_view address);
  // The value of `name` in an application/x-www-form-urlencoded `text`,
  // decoded; nullopt when absent or badly encoded.
  static std::optional<std::string> FormField(absl::string_view text, absl::string_view name);
  // Whether a Host header's value ("localhost:9464", "[::1]:9464") names this
  // host by a loopback name (localhost, 127.0.0.1, [::1]) with `port`
  // (80 when it gives none).
  static bool IsLocalHost(absl::string_view host, int port);

  // The custom header an admin request without a token must carry: a web
  // page's form cannot send it, nor can a script on another site without
  // a CORS preflight, which this server never grants.
  static constexpr absl::string_view kAdminHeader = "X-Resilience-Admin";

 private:
  HttpResponse Status(bool json, bool head) ABSL_LOCKS_EXCLUDED(mu_);
  // options_.status(), dated now when it did not say when.
  StatusReport Report() const;
  HttpResponse Admin(const HttpRequest& request);
  // POST /admin/enforcement, after RefuseAdmin().
  HttpResponse AdminEnforcement(const HttpRequest& request);
  // Every admin route's checks (loopback, browser, token, POST): the
  // response refusing `request`, nullopt when it may go on.
  std::optional<HttpResponse> RefuseAdmin(const HttpRequest& request) const;
  // An admin request's field `name`: from the query, else from a form body.
  static std::optional<std::string> AdminField(const HttpRequest& request, absl::string_view name);
  // `call()`, an admin callback named `callback`; Internal if it throws.
  static absl::Status Guarded(absl::string_view callback, absl::FunctionRef<absl::Status()> call);
  // A 403 when `request` may come from a web page of another site (its
  // Origin, its Sec-Fetch-Site, its Host); nullopt when it may go on.
  std::optional<HttpResponse> RefuseBrowserRequest(const HttpRequest& request) const;

  const MetricsHttpServer::Options& options_;
  Mutex mu_;
  // The report the next status request's rates count from: the previous
  // request's, or the one made at construction.
  std::optional<StatusReport> previous_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_HTTP_OPERATIONS_ROUTES_H_
