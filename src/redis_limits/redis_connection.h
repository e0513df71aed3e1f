// File: src/redis_limits/redis_connection.h
//
// One blocking hiredis connection whose every round trip has a deadline.

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_CONNECTION_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_CONNECTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct redisContext;
struct redisReply;

namespace resilience {

struct RedisReplyDeleter {
  void operator()(redisReply* r) const;
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyDeleter>;

// RedisConnection
//
// hiredis's own timeout (SO_RCVTIMEO) bounds each read, so a Redis that
// trickles a byte at a time holds a round trip for as long as it likes.
// Here `timeout` is a deadline on the whole round trip (write the command,
// read the whole reply): the socket is polled until then. After a failed
// round trip the connection is in an unknown state: drop it.
//
// Errors name the address: Unavailable for refused, reset or closed
// connections, DeadlineExceeded "timed out after 200ms (127.0.0.1:6379)".
// Not thread-safe; fd() is for another thread to shutdown() the socket,
// which makes a round trip in progress fail at once.
class RedisConnection {
 public:
  // Connects within `timeout`.
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(const std::string& host,
                                                                  int port,
                                                                  absl::Duration timeout);
  ~RedisConnection();

  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Command()
  //
  // One command and its reply (an error reply is a reply, not an error),
  // within the timeout.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string>& args);

  // Authenticate()
  //
  // AUTH [username] password. A refusal is PermissionDenied "AUTH as user
  // 'u' with the password of <credentials> refused by <address>: WRONGPASS
  // ..." (`credentials` says where the password came from; the password
  // itself is never in a message); a failed round trip as Command()'s.
  absl::Status Authenticate(const std::string& username, const std::string& password,
                            const std::string& credentials);

  int fd() const;
  // "127.0.0.1:6379".
  const std::string& address() const { return address_; }

 private:
  RedisConnection(redisContext* context, std::string address, absl::Duration timeout)
      : context_(context), address_(std::move(address)), timeout_(timeout) {}
  // Waits for `events` on the socket until `deadline`.
  absl::Status Wait(short events, absl::Time deadline, const char* what) const;
  absl::Status IoError(const char* what) const;

  redisContext* const context_;
  const std::string address_;
  const absl::Duration timeout_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_CONNECTION_H_
