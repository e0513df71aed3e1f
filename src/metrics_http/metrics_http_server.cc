// File: src/metrics_http/metrics_http_server.cc

#include "grpc_resilience/metrics_http.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "grpc_resilience/prometheus_text.h"
#include "absl/base/thread_annotations.h"
#include "src/core/mutex.h"
#include "src/metrics_http/operations_routes.h"

namespace resilience {
namespace {

// civetweb's library-wide state (mg_init_library / mg_exit_library) is
// reference counted but not thread-safe: every server takes one reference
// while it runs, under this lock.
Mutex& CivetwebLibraryMutex() {
  static Mutex* const mu = new Mutex;
  return *mu;
}

void AcquireCivetweb() {
  MutexLock lock(&CivetwebLibraryMutex());
  // It returns the features it initialized: 0 both for an error and when,
  // as here, none is asked for. An error shows when mg_start2() fails.
  mg_init_library(0);
}

void ReleaseCivetweb() {
  MutexLock lock(&CivetwebLibraryMutex());
  mg_exit_library();
}

struct Header {
  const char* name;
  const char* value;
};

// Sends a whole response; the return value is the handler's (the status).
int Respond(mg_connection* connection, int status, absl::string_view content_type,
            absl::string_view body, bool head, absl::Span<const Header> extra = {}) {
  const std::string content_type_text(content_type);
  const std::string length = absl::StrCat(body.size());
  // Our own Date header: civetweb writes its own with gmtime(), whose one
  // static buffer its worker threads would share. A date: wall-clock time.
  const std::string date = absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT",
                                            Clock::Real().WallNow(), absl::UTCTimeZone());
  mg_response_header_start(connection, status);
  mg_response_header_add(connection, "Date", date.c_str(), -1);
  mg_response_header_add(connection, "Content-Type", content_type_text.c_str(), -1);
  mg_response_header_add(connection, "Content-Length", length.c_str(), -1);
  for (const Header& header : extra) {
    mg_response_header_add(connection, header.name, header.value, -1);
  }
  mg_response_header_send(connection);
  if (!head && !body.empty()) mg_write(connection, body.data(), body.size());
  return status;
}

// Opens a connection to address:port and closes it, without waiting for
// the connection to complete.
void Knock(in_addr address, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in peer = {};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<uint16_t>(port));
  peer.sin_addr = address;
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer);
  close(fd);
}

constexpr absl::string_view kPlainText = "text/plain; charset=utf-8";

// What OperationsRoutes needs of a request; a form body is read (up to
// 64 KiB) only for POSTs.
HttpRequest ToHttpRequest(mg_connection* connection, const mg_request_info& info) {
  HttpRequest r;
  r.method = info.request_method != nullptr ? info.request_method : "";
  r.path = info.local_uri != nullptr ? info.local_uri : "";
  r.query = info.query_string != nullptr ? info.query_string : "";
  r.peer_address = info.remote_addr;
  r.peer_port = info.remote_port;
  if (const char* auth = mg_get_header(connection, "Authorization")) r.authorization = auth;
  if (const char* type = mg_get_header(connection, "Content-Type")) r.content_type = type;
  if (const char* host = mg_get_header(connection, "Host")) r.host = host;
  if (const char* origin = mg_get_header(connection, "Origin")) r.origin = origin;
  if (const char* site = mg_get_header(connection, "Sec-Fetch-Site")) r.sec_fetch_site = site;
  r.admin_header = mg_get_header(connection, std::string(OperationsRoutes::kAdminHeader).c_str()) !=
                   nullptr;
  r.server_port = info.server_port;
  if (r.method == "POST") {
    char buffer[4096];
    int n;
    while (r.body.size() < 65536 && (n = mg_read(connection, buffer, sizeof buffer)) > 0) {
      r.body.append(buffer, static_cast<size_t>(n));
    }
  }
  return r;
}

}  // namespace

// The server's state behind the public class: civetweb's context, and the
// render callback, which civetweb's threads call through HandleRequest().
class MetricsHttpServer::Impl {
 public:
  Impl(Options options, RenderFunction render)
      : options_(std::move(options)), routes_(options_), render_(std::move(render)) {}

  // Starts civetweb; the Impl must not move afterwards (civetweb holds it).
  absl::Status Listen();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  int port() const { return port_; }
  const Options& options() const { return options_; }

 private:
  static int HandleRequest(mg_connection* connection, void* self);
  int Serve(mg_connection* connection) ABSL_LOCKS_EXCLUDED(render_mu_);

  const Options options_;
  OperationsRoutes routes_;  // the status page and the admin endpoint
  int port_ = 0;  // set by Listen() before the object is shared
  Mutex render_mu_;
  RenderFunction render_ ABSL_GUARDED_BY(render_mu_);
  Mutex mu_;
  mg_context* context_ ABSL_GUARDED_BY(mu_) = nullptr;
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
  const Options& o = options_;
  // inet_pton accepted it: no ',' or other civetweb syntax can be in it.
  const std::string listening = absl::StrCat(o.bind_address, ":", o.port);
  const std::string threads = absl::StrCat(o.num_threads);
  const std::string timeout_ms =
      absl::StrCat(absl::ToInt64Milliseconds(std::min(o.request_timeout, absl::Hours(24))));
  // clang-format off
  const char* configuration[] = {
      "listening_ports",    listening.c_str(),
      "num_threads",        threads.c_str(),
      "request_timeout_ms", timeout_ms.c_str(),
      "enable_keep_alive",  "no",
      nullptr,
  };
  // clang-format on
  mg_callbacks callbacks = {};
  mg_init_data init = {};
  init.callbacks = &callbacks;
  init.user_data = this;
  init.configuration_options = configuration;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error = {};
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof error_text;

  AcquireCivetweb();
  mg_context* context = mg_start2(&init, &error);
  if (context == nullptr) {
    ReleaseCivetweb();
    return absl::UnavailableError(
        absl::StrCat("metrics HTTP server on ", listening,
                     " did not start: ", error_text[0] != '\0' ? error_text : "no reason given"));
  }
  // Every path: Serve() answers 404 for the others.
  mg_set_request_handler(context, "**", &Impl::HandleRequest, this);
  mg_server_port ports[4] = {};
  const int num_ports = mg_get_server_ports(context, 4, ports);
  if (num_ports < 1 || ports[0].port <= 0) {
    mg_stop(context);
    ReleaseCivetweb();
    return absl::InternalError(
        absl::StrCat("metrics HTTP server on ", listening, ": no listening port reported"));
  }
  port_ = ports[0].port;
  {
    MutexLock lock(&mu_);
    context_ = context;
  }
  return absl::OkStatus();
}

void MetricsHttpServer::Impl::Stop() {
  MutexLock lock(&mu_);
  if (context_ == nullptr) return;
  mg_context* const context = context_;
  context_ = nullptr;
  // mg_stop() raises civetweb's stop flag and waits for its threads, but the
  // listening thread looks at the flag only between polls of the listening
  // socket of up to 2 s each. A connection to the socket ends the poll, so
  // mg_stop() runs on a helper thread while this one knocks on the port,
  // and Stop() takes milliseconds instead of up to 2 s. A knock that comes
  // before the flag is accepted and closed like any connection that sends
  // nothing; once the listener is gone a knock is refused.
  std::atomic<bool> stopped{false};
  std::thread stopper([context, &stopped] {
    mg_stop(context);  // joins civetweb's threads: no request is being served after it
    stopped.store(true, std::memory_order_release);
  });
  in_addr address;
  inet_pton(AF_INET, options_.bind_address.c_str(), &address);  // valid: Start() checked
  if (address.s_addr == htonl(INADDR_ANY)) address.s_addr = htonl(INADDR_LOOPBACK);
  while (!stopped.load(std::memory_order_acquire)) {
    Knock(address, port_);
    absl::SleepFor(absl::Milliseconds(5));
  }
  stopper.join();
  ReleaseCivetweb();
}

int MetricsHttpServer::Impl::HandleRequest(mg_connection* connection, void* self) {
  return static_cast<Impl*>(self)->Serve(connection);
}

int MetricsHttpServer::Impl::Serve(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  const absl::string_view method =
      request != nullptr && request->request_method != nullptr ? request->request_method : "";
  const absl::string_view path =
      request != nullptr && request->local_uri != nullptr ? request->local_uri : "";
  const bool head = method == "HEAD";
  if (path != options_.path) {
    std::optional<HttpResponse> answer;
    if (request != nullptr) answer = routes_.Handle(ToHttpRequest(connection, *request));
    if (answer.has_value()) {
      std::vector<Header> headers;
      for (const auto& [name, value] : answer->headers) {
        headers.push_back(Header{name.c_str(), value.c_str()});
      }
      return Respond(connection, answer->status, answer->content_type, answer->body, head,
                     headers);
    }
    return Respond(connection, 404, kPlainText, "404 page not found\n", head);
  }
  if (method != "GET" && !head) {
    return Respond(connection, 405, kPlainText, "405 method not allowed: use GET\n", false,
                   {{"Allow", "GET, HEAD"}});
  }
  std::string body;
  bool rendered = true;
  {
    MutexLock lock(&render_mu_);
    // Exceptions must not cross civetweb's C frames.
    try {
      body = render_();
    } catch (...) {
      rendered = false;
    }
  }
  if (!rendered) {
    return Respond(connection, 500, kPlainText, "500 rendering the metrics failed\n", head);
  }
  return Respond(connection, 200, PrometheusText::kContentType, body, head,
                 {{"Cache-Control", "no-store"}});
}

}  // namespace resilience
