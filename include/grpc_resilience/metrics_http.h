/// \file include/grpc_resilience/metrics_http.h
///
/// An optional embedded HTTP endpoint for Prometheus scrapes: GET /metrics
/// answers with the text a callback renders; on request also the status page
/// (/status, /status.json) and the admin endpoint that forces breakers.
/// Library grpc_resilience::metrics_http (sockets and epoll, which this header
/// does not show: the server is a pimpl over src/metrics_http); the rest of
/// the metrics need no HTTP server.

#ifndef GRPC_RESILIENCE_METRICS_HTTP_H_
#define GRPC_RESILIENCE_METRICS_HTTP_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc_resilience/breaker_state.h"
#include "grpc_resilience/enforcement_mode.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/status_report.h"

namespace resilience {

/// An admin request to a breaker, as MetricsHttpServer::Options::admin.control
/// gets it.
struct GRPC_RESILIENCE_EXPORT BreakerCommandRequest {
  std::string channel;  ///< ClientResilience::name()
  std::string method;   ///< "/pkg.Service/Method"
  /// Optional field "endpoint": the method's breaker for that endpoint
  /// (ClientResilience::ControlEndpointBreaker()); empty: the method's own.
  std::string endpoint;
  BreakerCommand command;  ///< the command field's word, parsed
  /// `"admin endpoint, peer <address>:<port>"`: for ControlBreaker()'s origin.
  std::string origin;
};

/// An admin request for a policy's enforcement mode (docs/shadow-mode.md),
/// as MetricsHttpServer::Options::admin.enforcement gets it.
struct GRPC_RESILIENCE_EXPORT EnforcementRequest {
  /// ClientResilience::name() of the channel whose policy it is; empty when
  /// `server` names a server instead.
  std::string channel;
  /// Optional field "server": a server's policy (ServerResilience), by the
  /// name it was registered with; empty for a channel's.
  std::string server;
  std::string method;       ///< "/pkg.Service/Method"
  EnforcedPolicy policy;    ///< the policy field's word, parsed
  EnforcementMode mode;     ///< the mode field's word, parsed
  /// `"admin endpoint, peer <address>:<port>"`: for SetEnforcement()'s origin.
  std::string origin;
};

/// MetricsHttpServer
///
/// An embedded HTTP server for Prometheus scrapes, the status page and the
/// admin endpoint. Serves, on its own threads:
/// \code{.unparsed}
///   GET or HEAD <path>   200, Content-Type: text/plain; version=0.0.4;
///                        charset=utf-8, the body the render callback returns
///                        (a query string is ignored)
///   other methods there  405, with Allow: GET, HEAD
///   any other path       404
///   render throws        500
/// With Options::status set:
///   GET or HEAD /status       the status page (StatusReport::ToHtml()), with
///                             rates since the previous status request (the
///                             first: since Start(), which takes a report)
///   GET or HEAD /status.json  the same data as JSON (StatusReport::ToJson())
/// With Options::admin.enabled:
///   POST /admin/enforcement?channel=C&method=M&policy=P&mode=E
///                             (or server=S instead of channel): calls
///                             admin.enforcement with policy P (breaker,
///                             bulkhead, throttle, ...) and mode E (enforce,
///                             shadow, off); the same checks as below
///   POST /admin/breaker?channel=C&method=M&command=K[&endpoint=E]
///                             (or the same fields as a form body) runs
///                             admin.control with command K (BreakerCommand's
///                             words: force_open, force_closed, automatic,
///                             reset); answers JSON. 403 for a peer that is
///                             not loopback (unless admin.allow_remote), 401
///                             without "Authorization: Bearer <admin.token>"
///                             when a token is set, 400 for a missing or
///                             unknown field, 404 when control says NotFound.
///                             What a web page's form cannot send is required
///                             (the token, or without one the header
///                             "X-Resilience-Admin"), and a web page of
///                             another site is refused (403): a Sec-Fetch-Site
///                             other than same-origin or none, an Origin other
///                             than "http://" + Host, and (unless
///                             admin.allow_remote) a Host other than
///                             localhost, 127.0.0.1 or [::1] with the served
///                             port (DNS rebinding). E.g.:
///                               curl -X POST -H 'X-Resilience-Admin: 1'
///                                 'http://127.0.0.1:9464/admin/breaker?channel=
///                                 C&method=/pkg.S/M&command=force_open'
///                             (with a token: -H 'Authorization: Bearer T').
/// \endcode
/// The render callback is called once per GET or HEAD of `<path>`, by one
/// thread at a time, so it needs no locking of its own against itself (it
/// must still be safe against the threads that update the metrics it reads).
/// No files are served; connections are not kept alive. Requests are HTTP/1.x
/// with a head of at most 16 KiB and a body (Content-Length, not chunked) of
/// at most 64 KiB.
///
/// Stop() (or the destructor) closes the listening socket, waits for the
/// requests being served and joins the threads: after it returns the render
/// callback is not called again.
///
/// This class is thread-safe.
///
/// Example:
/// \code
///   MetricsHttpServer::Options options;
///   options.port = 9464;
///   absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
///       MetricsHttpServer::Start(options, [&] { return RenderMetrics(); });
///   if (!server.ok()) return server.status();   // e.g. the port is in use
///   std::cout << "metrics on port " << (*server)->port() << "\n";
/// \endcode
class GRPC_RESILIENCE_EXPORT MetricsHttpServer {
 public:
  /// Where and what it serves.
  struct Options {
    /// The IPv4 address to listen on: "127.0.0.1" (this host only) or
    /// "0.0.0.0" (every interface), or any other IPv4 address of this host.
    std::string bind_address = "127.0.0.1";
    /// 0: a free port the system picks; port() tells which.
    int port = 0;
    /// The path of the metrics.
    std::string path = "/metrics";
    /// Requests answered at the same time (renders are one at a time
    /// anyway). A thread takes a connection only once its whole request has
    /// arrived: one thread waits, with epoll, on every connection until
    /// then, so connections that send their request slowly (slowloris) or
    /// not at all cost a file descriptor each, not a thread, and a scrape
    /// behind hundreds of them is answered at once. At most 1024 connections
    /// wait for their request; beyond that (or when the process is out of
    /// file descriptors) the one that waited longest is closed. A thread
    /// holds its connection while the answer is written: a peer that does
    /// not read holds it up to request_timeout per write.
    int num_threads = 32;
    /// How long a request may take to arrive (from the connection's accept;
    /// then it is closed unanswered), and each write of its answer: long
    /// enough for a scrape on a LAN (milliseconds); raise it for scrapes of
    /// a large exposition over a slow link.
    absl::Duration request_timeout = absl::Seconds(1);

    /// The status page's data; empty: /status and /status.json are 404. It
    /// is called once per status request, one at a time, and once in
    /// Start() (the first request's rates count from there).
    std::function<StatusReport()> status;
    /// How often the HTML page reloads itself.
    absl::Duration status_refresh = absl::Seconds(2);

    /// The admin endpoint: POST /admin/breaker.
    struct Admin {
      /// Off unless true.
      bool enabled = false;
      /// Not empty: every admin request must carry it as
      /// `"Authorization: Bearer <token>"` (compared in constant time). Empty:
      /// every admin request must carry the header "X-Resilience-Admin"
      /// (any value), which a web page's form cannot send.
      std::string token;
      /// Serve admin requests from peers that are not loopback (127.0.0.0/8,
      /// ::1). Off: they get 403 even when bind_address is 0.0.0.0.
      bool allow_remote = false;
      /// Carries out a command (e.g. ClientResilience::ControlBreaker() of
      /// the channel named request.channel); required when enabled.
      std::function<absl::Status(const BreakerCommandRequest&)> control;
      /// Sets a policy's enforcement mode (POST /admin/enforcement; e.g.
      /// ClientResilience::SetEnforcement() of the channel named
      /// request.channel). Unset: that route answers 404.
      std::function<absl::Status(const EnforcementRequest&)> enforcement;
    };
    Admin admin;  ///< the admin endpoint; off by default
  };
  /// Renders the body of a metrics scrape (e.g. PrometheusText::Finish()).
  using RenderFunction = std::function<std::string()>;

  /// Start()
  ///
  /// Listens and serves. InvalidArgument for bad options (an address that is
  /// not an IPv4 address, a port outside 0..65535, a path not starting with
  /// '/', num_threads < 1, a request_timeout under a millisecond, no render
  /// callback); Unavailable when the server cannot start (e.g. the port is
  /// in use), with the system's reason.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(Options options,
                                                                  RenderFunction render);

  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  /// The port it listens on (the one picked when Options::port was 0).
  int port() const;
  /// The options it was started with (Options::port as given; port() is
  /// the one it listens on).
  const Options& options() const;

  /// Stop()
  ///
  /// Stops serving; returns once no request is being served. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_METRICS_HTTP_H_
