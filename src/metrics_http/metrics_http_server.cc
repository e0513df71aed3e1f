// File: src/metrics_http/metrics_http_server.cc

#include "grpc_resilience/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/core/mutex.h"
#include "src/metrics_http/http_listener.h"
#include "src/metrics_http/operations_routes.h"

namespace resilience {
namespace {

constexpr absl::string_view kPlainText = "text/plain; charset=utf-8";

// What OperationsRoutes needs of a request.
HttpRequest ToHttpRequest(const HttpListener::Request& from) {
  const ParsedHttpRequest& h = from.http;
  HttpRequest r;
  r.method = h.method;
  r.path = h.path;
  r.query = h.query;
  r.body = h.body;
  r.peer_address = from.peer_address;
  r.peer_port = from.peer_port;
  r.server_port = from.server_port;
  const auto header = [&h](absl::string_view name) {
    return std::string(h.Header(name).value_or(""));
  };
  r.authorization = header("authorization");
  r.content_type = header("content-type");
  r.host = header("host");
  r.origin = header("origin");
  r.sec_fetch_site = header("sec-fetch-site");
  r.admin_header = h.Header(absl::AsciiStrToLower(OperationsRoutes::kAdminHeader)).has_value();
  return r;
}

}  // namespace

// The server's state behind the public class: the listener, and the render
// callback, which the listener's workers call through Serve().
class GRPC_RESILIENCE_NO_EXPORT MetricsHttpServer::Impl {
 public:
  Impl(Options options, RenderFunction render)
      : options_(std::move(options)), routes_(options_), render_(std::move(render)) {}

  // Starts the listener; the Impl must not move afterwards (it holds it).
  absl::Status Listen() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  int port() const { return port_; }
  const Options& options() const { return options_; }

 private:
  std::string Serve(const HttpListener::Request& request) ABSL_LOCKS_EXCLUDED(render_mu_);

  const Options options_;
  OperationsRoutes routes_;  // the status page and the admin endpoint
  int port_ = 0;  // set by Listen() before the object is shared
  Mutex render_mu_;
  RenderFunction render_ ABSL_GUARDED_BY(render_mu_);
  // Held through Stop(), so that every Stop() returns once stopped.
  Mutex mu_;
  std::unique_ptr<HttpListener> listener_ ABSL_GUARDED_BY(mu_);
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return impl_->port(); }

const MetricsHttpServer::Options& MetricsHttpServer::options() const { return impl_->options(); }

void MetricsHttpServer::Stop() { impl_->Stop(); }

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(Options options,
                                                                            RenderFunction render) {
  in_addr address;
  if (inet_pton(AF_INET, options.bind_address.c_str(), &address) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics HTTP server: bind_address \"", options.bind_address,
                     "\" is not an IPv4 address (e.g. 127.0.0.1 or 0.0.0.0)"));
  }
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics HTTP server: port ", options.port, " is not in 0..65535"));
  }
  if (options.path.empty() || options.path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics HTTP server: path \"", options.path, "\" must start with '/'"));
  }
  if (options.num_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("metrics HTTP server: num_threads ",
                                                   options.num_threads, " must be at least 1"));
  }
  if (options.request_timeout < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat("metrics HTTP server: request_timeout ",
                                                   absl::FormatDuration(options.request_timeout),
                                                   " is under 1ms"));
  }
  if (!render) {
    return absl::InvalidArgumentError("metrics HTTP server: no render callback");
  }
  for (absl::string_view taken : {OperationsRoutes::kStatusPath, OperationsRoutes::kStatusJsonPath,
                                  OperationsRoutes::kAdminBreakerPath}) {
    if (options.path == taken) {
      return absl::InvalidArgumentError(absl::StrCat("metrics HTTP server: path \"", options.path,
                                                     "\" is the status page's or the admin",
                                                     " endpoint's; pick another"));
    }
  }
  if (options.admin.enabled && !options.admin.control) {
    return absl::InvalidArgumentError(
        "metrics HTTP server: admin.enabled without an admin.control callback");
  }

  auto impl = std::make_unique<Impl>(std::move(options), std::move(render));
  if (absl::Status s = impl->Listen(); !s.ok()) return s;
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

absl::Status MetricsHttpServer::Impl::Listen() {
  HttpListener::Options o;
  o.bind_address = options_.bind_address;
  o.port = options_.port;
  o.num_threads = options_.num_threads;
  o.request_timeout = std::min(options_.request_timeout, absl::Hours(24));
  absl::StatusOr<std::unique_ptr<HttpListener>> listener =
      HttpListener::Start(o, [this](const HttpListener::Request& r) { return Serve(r); });
  if (!listener.ok()) return listener.status();
  port_ = (*listener)->port();
  MutexLock lock(&mu_);
  listener_ = *std::move(listener);
  return absl::OkStatus();
}

void MetricsHttpServer::Impl::Stop() {
  MutexLock lock(&mu_);
  if (listener_ != nullptr) listener_->Stop();
}

std::string MetricsHttpServer::Impl::Serve(const HttpListener::Request& request) {
  const ParsedHttpRequest& http = request.http;
  const bool head = http.method == "HEAD";
  if (http.path != options_.path) {
    if (std::optional<HttpResponse> answer = routes_.Handle(ToHttpRequest(request))) {
      return HttpListener::Response(answer->status, answer->content_type, answer->body, head,
                                    answer->headers);
    }
    return HttpListener::Response(404, kPlainText, "404 page not found\n", head);
  }
  if (http.method != "GET" && !head) {
    return HttpListener::Response(405, kPlainText, "405 method not allowed: use GET\n", false,
                                  {{"Allow", "GET, HEAD"}});
  }
  std::string body;
  bool rendered = true;
  {
    MutexLock lock(&render_mu_);
    try {
      body = render_();
    } catch (...) {
      rendered = false;
    }
  }
  if (!rendered) {
    return HttpListener::Response(500, kPlainText, "500 rendering the metrics failed\n", head);
  }
  return HttpListener::Response(200, PrometheusText::kContentType, body, head,
                                {{"Cache-Control", "no-store"}});
}

}  // namespace resilience
