#include "tests/redis_limits/trickle_proxy.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"

namespace resilience::testing {
namespace {

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<int> ListenOnLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError("cannot listen on 127.0.0.1:0");
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

absl::StatusOr<std::unique_ptr<TrickleProxy>> TrickleProxy::Start(int target_port,
                                                                  absl::Duration gap) {
  int port = 0;
  absl::StatusOr<int> fd = ListenOnLoopback(&port);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<TrickleProxy>(new TrickleProxy(*fd, port, target_port, gap));
}

TrickleProxy::TrickleProxy(int listen_fd, int port, int target_port, absl::Duration gap)
    : listen_fd_(listen_fd), port_(port), target_port_(target_port), gap_(gap) {
  thread_ = std::thread([this] { Run(); });
}

TrickleProxy::~TrickleProxy() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

void TrickleProxy::Run() {
  int client = -1;
  int server = -1;
  std::string pending;  // the server's bytes not yet passed on
  absl::Time next_byte = absl::Now();
  auto drop = [&] {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
    client = server = -1;
    pending.clear();
  };
  while (!stop_) {
    pollfd fds[3] = {{listen_fd_, POLLIN, 0}, {client, POLLIN, 0}, {server, POLLIN, 0}};
    poll(fds, 3, 10);
    if (fds[0].revents & POLLIN) {
      const int accepted = accept(listen_fd_, nullptr, nullptr);
      if (accepted >= 0) {
        drop();
        client = accepted;
        server = ConnectLoopback(target_port_);
        if (server < 0) drop();
      }
    }
    char buf[4096];
    if (client >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = read(client, buf, sizeof(buf));
      if (n <= 0 || write(server, buf, static_cast<size_t>(n)) != n) drop();
    }
    if (server >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = read(server, buf, sizeof(buf));
      if (n <= 0) {
        drop();
      } else {
        pending.append(buf, static_cast<size_t>(n));
      }
    }
    if (client >= 0 && !pending.empty() && absl::Now() >= next_byte) {
      if (send(client, pending.data(), 1, MSG_NOSIGNAL) != 1) {
        drop();
      } else {
        pending.erase(0, 1);
        next_byte = absl::Now() + gap_;
      }
    }
  }
  drop();
}

}  // namespace resilience::testing
