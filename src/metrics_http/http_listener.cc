#include "src/metrics_http/http_listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "src/core/clock.h"

namespace resilience {
namespace {

absl::string_view Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

// The system's text for errno `error`.
std::string ErrorText(int error) {
  char buffer[128];
  return strerror_r(error, buffer, sizeof buffer);  // the GNU strerror_r
}

// Writes all of `data` to the blocking socket `fd`, each wait bounded by its
// SO_SNDTIMEO; false when the peer is gone or took too long.
bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// epoll's data of the wake eventfd; the listening socket's is null, a
// connection's its Waiting.
char wake_marker;

constexpr absl::string_view kPlainText = "text/plain; charset=utf-8";

}  // namespace

std::string HttpListener::Response(
    int status, absl::string_view content_type, absl::string_view body, bool head,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  // A date: wall-clock time.
  std::string out = absl::StrCat(
      "HTTP/1.1 ", status, " ", Reason(status), "\r\nDate: ",
      absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", Clock::Real().WallNow(), absl::UTCTimeZone()),
      "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", body.size(), "\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  out += "Connection: close\r\n\r\n";
  if (!head) out.append(body.data(), body.size());
  return out;
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(Options options,
                                                                  Handler handler) {
  std::unique_ptr<HttpListener> listener(new HttpListener(std::move(options), std::move(handler)));
  if (absl::Status s = listener->Listen(); !s.ok()) return s;
  HttpListener* const self = listener.get();
  listener->loop_ = std::thread([self] { self->Loop(); });
  for (int i = 0; i < listener->options_.num_threads; ++i) {
    listener->workers_.emplace_back([self] { self->Work(); });
  }
  return listener;
}

HttpListener::~HttpListener() {
  Stop();
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) close(fd);
  }
}

absl::Status HttpListener::Listen() {
  const std::string where = absl::StrCat(options_.bind_address, ":", options_.port);
  const auto fail = [&](absl::string_view step) {
    return absl::UnavailableError(absl::StrCat("metrics HTTP server on ", where,
                                               " did not start: ", step, ": ", ErrorText(errno)));
  };
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail("socket");
  // A restarted server binds while its predecessor's connections linger in
  // TIME_WAIT; two listeners on one port are still refused (no SO_REUSEPORT).
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(options_.port));
  inet_pton(AF_INET, options_.bind_address.c_str(), &address.sin_addr);  // checked by the caller
  if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return fail("bind");
  }
  if (listen(listen_fd_, SOMAXCONN) != 0) return fail("listen");
  socklen_t length = sizeof address;
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return fail("getsockname");
  }
  port_ = ntohs(address.sin_port);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return fail("epoll_create1");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return fail("eventfd");
  epoll_event event = {};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &event) != 0) return fail("epoll_ctl");
  event.data.ptr = &wake_marker;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) return fail("epoll_ctl");
  return absl::OkStatus();
}

void HttpListener::Loop() {
  epoll_event events[64];
  while (true) {
    const absl::Time now = Clock::Real().Now();
    absl::Time until = absl::InfiniteFuture();
    if (!waiting_.empty()) until = waiting_.front().deadline;
    if (resume_accepting_ != absl::InfinitePast()) until = std::min(until, resume_accepting_);
    const int timeout_ms =
        until == absl::InfiniteFuture()
            ? -1
            : static_cast<int>(std::clamp<int64_t>(
                  absl::ToInt64Milliseconds(absl::Ceil(until - now, absl::Milliseconds(1))), 0,
                  60'000));
    const int n = epoll_wait(epoll_fd_, events, 64, timeout_ms);
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      void* const data = events[i].data.ptr;
      if (data == &wake_marker) {
        stop = true;
      } else if (data == nullptr) {
        Accept();
      } else if (Waiting& w = *static_cast<Waiting*>(data); w.fd >= 0) {
        Read(w);
      }
    }
    graveyard_.clear();
    if (stop) break;
    const absl::Time after = Clock::Real().Now();
    // Connections whose request did not come in time: closed unanswered.
    while (!waiting_.empty() && waiting_.front().deadline <= after) Drop(waiting_.front());
    graveyard_.clear();
    if (resume_accepting_ != absl::InfinitePast() && resume_accepting_ <= after) {
      resume_accepting_ = absl::InfinitePast();
      epoll_event event = {};
      event.events = EPOLLIN;
      event.data.ptr = nullptr;
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &event);
    }
  }
  // Stopped: the port is closed (connections are refused from now on), and
  // so is every connection still waiting.
  while (!waiting_.empty()) Drop(waiting_.front());
  graveyard_.clear();
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  close(listen_fd_);
  listen_fd_ = -1;
}

void HttpListener::PauseAccepting() {
  epoll_event event = {};
  event.events = 0;
  event.data.ptr = nullptr;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &event);
  resume_accepting_ = Clock::Real().Now() + absl::Milliseconds(100);
}

void HttpListener::Accept() {
  while (true) {
    sockaddr_in peer = {};
    socklen_t length = sizeof peer;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &length,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      const bool out_of_descriptors =
          errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
      if (out_of_descriptors && !waiting_.empty()) {
        Drop(waiting_.front());  // the one that waited longest makes room
        continue;
      }
      if (out_of_descriptors) PauseAccepting();
      return;  // EAGAIN: none left
    }
    if (waiting_.size() >= kMaxWaiting) Drop(waiting_.front());
    Waiting& w = waiting_.emplace_back();
    w.self = std::prev(waiting_.end());
    w.fd = fd;
    w.deadline = Clock::Real().Now() + options_.request_timeout;
    char text[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
    w.peer_address = text;
    w.peer_port = ntohs(peer.sin_port);
    epoll_event event = {};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.ptr = &w;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) Drop(w);
  }
}

void HttpListener::Drop(Waiting& w, bool keep_fd) {
  if (w.fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, w.fd, nullptr);
    if (!keep_fd) close(w.fd);
    w.fd = -1;
  }
  // Freed after the batch of events being handled, which may point to it.
  graveyard_.splice(graveyard_.end(), waiting_, w.self);
}

void HttpListener::Read(Waiting& w) {
  bool ended = false;
  char buffer[16384];
  constexpr size_t kMax = HttpRequestParser::kMaxHeadBytes + HttpRequestParser::kMaxBodyBytes + 4;
  while (w.received.size() <= kMax) {
    const ssize_t n = recv(w.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      w.received.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  HttpRequestParser::Result parsed = HttpRequestParser::Parse(w.received);
  if (parsed.kind == HttpRequestParser::Result::Kind::kBad) {
    // Small enough for the socket's buffer: sent without waiting.
    const std::string answer = Response(
        parsed.status, kPlainText, absl::StrCat(parsed.status, " ", parsed.message, "\n"), false);
    (void)send(w.fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    Drop(w);
    return;
  }
  if (parsed.kind == HttpRequestParser::Result::Kind::kIncomplete) {
    if (ended) {
      Drop(w);
    } else if (parsed.wants_continue && !w.continue_sent) {
      constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)send(w.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      w.continue_sent = true;
    }
    return;
  }
  Request request{std::move(parsed.request), w.peer_address, w.peer_port, port_};
  const int fd = w.fd;
  Drop(w, /*keep_fd=*/true);
  {
    MutexLock lock(&mu_);
    if (!stopping_ && work_.size() < kMaxWaiting) {
      work_.emplace_back(fd, std::move(request));
      work_ready_.Signal();
      return;
    }
  }
  const std::string busy = Response(503, kPlainText, "503 too many requests at once\n", false);
  (void)send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

void HttpListener::Work() {
  while (true) {
    std::pair<int, Request> item;
    {
      MutexLock lock(&mu_);
      while (work_.empty() && !stopping_) work_ready_.Wait(&mu_);
      if (stopping_) return;
      item = std::move(work_.front());
      work_.pop_front();
    }
    const int fd = item.first;
    // Blocking from here, each send bounded by request_timeout.
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    const timeval timeout = absl::ToTimeval(options_.request_timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    std::string answer;
    // Exceptions must not end the worker.
    try {
      answer = handler_(item.second);
    } catch (...) {
      answer = Response(500, kPlainText, "500 the request's handler failed\n", false);
    }
    WriteAll(fd, answer);
    close(fd);
  }
}

void HttpListener::Stop() {
  MutexLock stop_lock(&stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_ready_.SignalAll();
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    const ssize_t written = write(wake_fd_, &one, sizeof one);  // cannot fail: a fresh eventfd
    (void)written;
  }
  if (loop_.joinable()) loop_.join();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  // Whole requests no worker took: closed unanswered.
  MutexLock lock(&mu_);
  for (const std::pair<int, Request>& item : work_) close(item.first);
  work_.clear();
}

}  // namespace resilience
