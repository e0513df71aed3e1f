// File: src/metrics_http/http_listener.h
//
// The sockets under MetricsHttpServer: one thread waits, with epoll, on the
// listening socket and on every connection until its request is whole, and
// a pool of workers answers whole requests. A connection that sends nothing
// (or sends slowly) costs a file descriptor and a buffer, not a thread, so
// a scrape behind hundreds of idle connections is read and answered at once
// (with civetweb's thread per connection, which this replaced, 500 idle
// connections made scrapes wait 2 s and more).

#ifndef GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_LISTENER_H_
#define GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_LISTENER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"
#include "src/metrics_http/http_request_parser.h"

namespace resilience {

// HttpListener
//
// Listens on an IPv4 address. Each connection carries one request (the
// answer says "Connection: close"). A connection whose request is not whole
// within request_timeout of its accept is closed unanswered; when
// kMaxWaiting connections wait for their request, the one that waited
// longest is closed to take the next (and when the process runs out of file
// descriptors, likewise). Stop() (or the destructor) closes the socket,
// lets the requests being answered finish and joins the threads.
//
// This class is thread-safe.
class HttpListener {
 public:
  // Connections waiting for their request at most.
  static constexpr size_t kMaxWaiting = 1024;

  struct Options {
    std::string bind_address = "127.0.0.1";  // IPv4, already checked
    int port = 0;
    int num_threads = 1;  // workers answering whole requests
    absl::Duration request_timeout = absl::Seconds(1);
  };
  struct Request {
    ParsedHttpRequest http;
    std::string peer_address;  // "127.0.0.1"
    int peer_port = 0;
    int server_port = 0;
  };
  // The whole answer to send (Response()), on a worker thread.
  using Handler = std::function<std::string(const Request&)>;

  // Start()
  //
  // Listens and serves; Unavailable (with the system's reason) when the
  // socket cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(Options options, Handler handler);

  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  int port() const { return port_; }
  // Idempotent; returns once no request is being answered.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_, stop_mu_);

  // Response()
  //
  // An HTTP/1.1 answer: status line, Date (now, wall clock), Content-Type,
  // Content-Length, `headers`, "Connection: close", and the body unless
  // `head`.
  static std::string Response(int status, absl::string_view content_type, absl::string_view body,
                              bool head,
                              const std::vector<std::pair<std::string, std::string>>& headers = {});

 private:
  // One connection waiting for its whole request.
  struct Waiting {
    int fd = -1;
    std::string received;
    absl::Time deadline;  // monotonic
    std::string peer_address;
    int peer_port = 0;
    bool continue_sent = false;
    std::list<Waiting>::iterator self;  // its place in waiting_
  };

  HttpListener(Options options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)) {}
  absl::Status Listen();
  void Loop();
  // Accepts every connection the listening socket holds.
  void Accept();
  // Reads what `w` sent; hands a whole request to the workers, answers a
  // refused one, closes one that ended.
  void Read(Waiting& w);
  // Forgets `w` (its socket closed unless `keep_fd`).
  void Drop(Waiting& w, bool keep_fd = false);
  void Work() ABSL_LOCKS_EXCLUDED(mu_);
  // Pauses accepting for a moment (out of file descriptors, none to free).
  void PauseAccepting();

  const Options options_;
  const Handler handler_;
  int port_ = 0;        // set by Listen()
  int listen_fd_ = -1;  // owned by the loop once it runs
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop() wakes the loop
  // The loop thread's alone. waiting_: oldest first (their deadlines in
  // order, as every connection waits the same request_timeout); graveyard_:
  // the ones dropped while a batch of epoll events (which may still point
  // to them) is handled; accepting again at resume_accepting_ after the
  // process ran out of file descriptors.
  std::list<Waiting> waiting_;
  std::list<Waiting> graveyard_;
  absl::Time resume_accepting_ = absl::InfinitePast();
  // Serializes Stop()s: each returns once the listener is stopped.
  Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread loop_;
  std::vector<std::thread> workers_;

  Mutex mu_;
  CondVar work_ready_;
  std::deque<std::pair<int, Request>> work_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_HTTP_HTTP_LISTENER_H_
