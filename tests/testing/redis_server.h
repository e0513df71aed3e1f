// File: tests/testing/redis_server.h
//
// Debian's redis-server on a free loopback port, for the tests of the
// fleet-wide rate limit: no persistence, logs discarded, stopped (SIGKILL)
// and started again on the same port on demand; optionally with a password
// (--requirepass), ACL users and other settings (maxmemory, ...).

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
  struct Options {
    // --requirepass: the default user's password; Command() sends it.
    std::string password;
    // More arguments, e.g. {"--maxmemory", "2mb"} or {"--user", "alice",
    // "on", ">pw", "~*", "&*", "+@all"} (one word each: redis-server quotes
    // an argument with spaces).
    std::vector<std::string> args;
  };

  // Start()
  //
  // `binary` (redis-server) on a free port, answering PING within
  // `ready_within`; an error otherwise.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary, absl::Duration ready_within = absl::Seconds(10));
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary, Options options,
      absl::Duration ready_within = absl::Seconds(10));

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
  // One command on a fresh connection (AUTH with the password first, when
  // there is one); the reply as text (an integer or string reply's value,
  // an error reply's message).
  absl::StatusOr<std::string> Command(const std::vector<std::string>& args);

  // The admin password Command() sends from now on (after CONFIG SET
  // requirepass).
  void set_password(std::string password) { options_.password = std::move(password); }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  RedisServer(std::string binary, Options options, int port)
      : binary_(std::move(binary)), options_(std::move(options)), port_(port) {}
  absl::Status Launch(absl::Duration ready_within);

  const std::string binary_;
  Options options_;
  const int port_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_REDIS_SERVER_H_
