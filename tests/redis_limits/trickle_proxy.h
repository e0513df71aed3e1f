// File: tests/redis_limits/trickle_proxy.h
//
// A TCP proxy on a free loopback port in front of a real server that passes
// requests on at once and trickles the replies back, one byte per `gap`: a
// Redis that answers every read, too slowly for any round trip.

#ifndef GRPC_RESILIENCE_TESTS_REDIS_LIMITS_TRICKLE_PROXY_H_
#define GRPC_RESILIENCE_TESTS_REDIS_LIMITS_TRICKLE_PROXY_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace resilience::testing {

// ListenOnLoopback()
//
// A socket listening on a free port of 127.0.0.1 (`*port`), or an error.
// Nobody accepts on it unless asked: the kernel completes connections into
// its backlog and nothing ever answers, a Redis that never replies.
absl::StatusOr<int> ListenOnLoopback(int* port);

// TrickleProxy
//
// One client connection at a time (a new one replaces the old). The
// destructor stops its thread within a poll interval (10 ms).
class TrickleProxy {
 public:
  static absl::StatusOr<std::unique_ptr<TrickleProxy>> Start(int target_port, absl::Duration gap);
  ~TrickleProxy();

  int port() const { return port_; }

 private:
  TrickleProxy(int listen_fd, int port, int target_port, absl::Duration gap);
  void Run();

  const int listen_fd_;
  const int port_;
  const int target_port_;
  const absl::Duration gap_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_REDIS_LIMITS_TRICKLE_PROXY_H_
