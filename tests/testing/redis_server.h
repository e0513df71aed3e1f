// File: tests/testing/redis_server.h
//
// Debian's redis-server on a free loopback port, for the tests of the
// fleet-wide rate limit: no persistence, logs discarded, stopped (SIGKILL)
// and started again on the same port on demand.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_REDIS_SERVER_H_
#define GRPC_RESILIENCE_TESTS_TESTING_REDIS_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"

namespace resilience::testing {

// FreeLoopbackPort()
//
// A TCP port of 127.0.0.1 that was free a moment ago (bound to port 0, then
// closed).
absl::StatusOr<int> FreeLoopbackPort();

// RedisServer
//
// Not thread-safe.
class RedisServer {
 public:
  // Start()
  //
  // `binary` (redis-server) on a free port, answering PING within
  // `ready_within`; an error otherwise.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary, absl::Duration ready_within = absl::Seconds(10));

  // Kill()
  //
  // SIGKILL, and reaped: connections see a reset, new ones are refused.
  void Kill();

  // Restart()
  //
  // Started again on the same port (empty: no persistence).
  absl::Status Restart(absl::Duration ready_within = absl::Seconds(10));

  // Command()
  //
  // One command on a fresh connection; the reply as text (an integer or
  // string reply's value, an error reply's message).
  absl::StatusOr<std::string> Command(const std::vector<std::string>& args);

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  RedisServer(std::string binary, int port) : binary_(std::move(binary)), port_(port) {}
  absl::Status Launch(absl::Duration ready_within);

  const std::string binary_;
  const int port_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_REDIS_SERVER_H_
