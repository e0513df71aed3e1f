// File: src/redis_limits/redis_lease_client.h
//
// One connection to the Redis of fleet-wide rate limits and the lease
// script's round trips on it: what RedisLeaseSource (one bucket) and
// RedisLeaseQueueWorker (many keys) share.

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_CLIENT_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"
#include "src/policy/global_throttle_settings.h"
#include "src/redis_limits/lease_script.h"
#include "src/redis_limits/redis_connection.h"

namespace resilience {

// RedisLeaseClient
//
// Connect() connects (within `timeout`), authenticates (AUTH when there is a
// password, asked for at each connect: a rotated file is read again) and
// loads the lease script; Lease() takes tokens of one key with one script
// call (EVALSHA, EVAL when Redis no longer has the script). Every round trip
// must finish within `timeout`. A failed Connect() or Lease() drops the
// connection: the next Lease() needs a Connect().
//
// Used by one thread; Shutdown() is for another (a destructor): it breaks
// off a round trip in progress (shutdown of the socket) and makes later
// Connect() calls fail.
class RedisLeaseClient {
 public:
  struct Options {
    std::string host;
    int port = 6379;
    absl::Duration timeout = absl::Milliseconds(200);
    // AUTH: the ACL user (empty: the default user), and the password, asked
    // for at each connect; empty: no AUTH. `credentials` names where the
    // password comes from, for messages.
    std::string username;
    std::function<absl::StatusOr<std::string>()> password;
    std::string credentials;
  };

  // The options of the store `settings` names (its AUTH included).
  static Options FromSettings(const GlobalThrottleSettings& settings);

  explicit RedisLeaseClient(Options options) : options_(std::move(options)) {}
  ~RedisLeaseClient() { Disconnect(); }

  RedisLeaseClient(const RedisLeaseClient&) = delete;
  RedisLeaseClient& operator=(const RedisLeaseClient&) = delete;

  absl::Status Connect() ABSL_LOCKS_EXCLUDED(mu_);
  bool connected() const { return connection_ != nullptr; }

  // Lease()
  //
  // `want` tokens of the bucket `key` (`rate`/`burst`); `leased_before`: a
  // lease from it succeeded before (a missing key is then a lost one);
  // `expire_when_full`: a caller key's bucket (LeaseScript's ARGV[5]).
  // Connected first when not connected.
  absl::StatusOr<LeaseScript::Reply> Lease(const std::string& key, double rate, int64_t burst,
                                           int64_t want, bool leased_before,
                                           bool expire_when_full = false)
      ABSL_LOCKS_EXCLUDED(mu_);

  void Disconnect() ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  bool shut_down() const ABSL_LOCKS_EXCLUDED(mu_);

  const Options& options() const { return options_; }

  // A write to a socket Redis closed raises SIGPIPE on the writing thread:
  // BlockSigpipe() (on the client's thread, once) keeps it pending instead
  // of ending the process, DropPendingSigpipe() (after a failure) clears it.
  static void BlockSigpipe();
  static void DropPendingSigpipe();

 private:
  absl::Status Authenticate(RedisConnection& connection);

  const Options options_;
  // The connection and the script's SHA1: the using thread's.
  std::unique_ptr<RedisConnection> connection_;
  std::string sha_;

  mutable Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // The connection's socket, for Shutdown(); -1 without one.
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_LEASE_CLIENT_H_
