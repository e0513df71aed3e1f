#include "src/redis_limits/redis_lease_client.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/policy/global_throttle_policy.h"

namespace resilience {
namespace {

absl::string_view ErrorText(const redisReply& reply) {
  return reply.type == REDIS_REPLY_ERROR ? absl::string_view(reply.str, reply.len)
                                         : absl::string_view("unexpected reply");
}

}  // namespace

void RedisLeaseClient::BlockSigpipe() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

void RedisLeaseClient::DropPendingSigpipe() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
    const timespec zero = {0, 0};
    sigtimedwait(&pipe, nullptr, &zero);
  }
}

RedisLeaseClient::Options RedisLeaseClient::FromSettings(const GlobalThrottleSettings& settings) {
  Options o;
  o.host = settings.host;
  o.port = settings.port;
  o.timeout = settings.timeout;
  if (!settings.password_env.empty() || !settings.password_file.empty()) {
    o.username = settings.username;
    o.password = [settings] { return ReadGlobalThrottlePassword(settings); };
    o.credentials = GlobalThrottlePasswordSource(settings);
  }
  return o;
}

absl::Status RedisLeaseClient::Connect() {
  Disconnect();
  absl::StatusOr<std::unique_ptr<RedisConnection>> c =
      RedisConnection::Connect(options_.host, options_.port, options_.timeout);
  if (!c.ok()) return c.status();
  {
    MutexLock lock(&mu_);
    if (shut_down_) return absl::CancelledError("stopping");
    fd_ = (*c)->fd();
    connection_ = *std::move(c);
  }
  absl::Status s = Authenticate(*connection_);
  if (s.ok()) {
    absl::StatusOr<RedisReply> reply =
        connection_->Command({"SCRIPT", "LOAD", LeaseScript::kSource});
    if (!reply.ok()) {
      s = reply.status();
    } else if ((*reply)->type != REDIS_REPLY_STRING) {
      const absl::string_view error = ErrorText(**reply);
      const bool no_auth = absl::StartsWith(error, "NOAUTH") && !options_.password;
      s = absl::UnavailableError(absl::StrCat(
          "SCRIPT LOAD (", connection_->address(), "): ", error,
          no_auth ? " (the policy sets neither passwordEnv nor passwordFile)" : ""));
    } else {
      sha_.assign((*reply)->str, (*reply)->len);
    }
  }
  if (!s.ok()) Disconnect();
  return s;
}

absl::Status RedisLeaseClient::Authenticate(RedisConnection& connection) {
  if (!options_.password) return absl::OkStatus();
  absl::StatusOr<std::string> password = options_.password();
  if (!password.ok()) return password.status();
  return connection.Authenticate(options_.username, *password, options_.credentials);
}

void RedisLeaseClient::Disconnect() {
  std::unique_ptr<RedisConnection> c;
  MutexLock lock(&mu_);
  c = std::move(connection_);
  fd_ = -1;
}

void RedisLeaseClient::Shutdown() {
  MutexLock lock(&mu_);
  shut_down_ = true;
  // Breaks off a round trip in progress: its read or write fails at once.
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool RedisLeaseClient::shut_down() const {
  MutexLock lock(&mu_);
  return shut_down_;
}

absl::StatusOr<LeaseScript::Reply> RedisLeaseClient::Lease(const std::string& key, double rate,
                                                            int64_t burst, int64_t want,
                                                            bool leased_before,
                                                            bool expire_when_full) {
  if (connection_ == nullptr) {
    if (absl::Status s = Connect(); !s.ok()) return s;
  }
  std::vector<std::string> args = {"EVALSHA", sha_};
  for (std::string& a : LeaseScript::Args(key, rate, burst, want, leased_before,
                                                      expire_when_full)) {
    args.push_back(std::move(a));
  }
  absl::StatusOr<RedisReply> reply = connection_->Command(args);
  if (reply.ok() && (*reply)->type == REDIS_REPLY_ERROR &&
      absl::StartsWith(ErrorText(**reply), "NOSCRIPT")) {
    // Redis restarted or flushed its scripts: EVAL runs and caches it again.
    args[0] = "EVAL";
    args[1] = LeaseScript::kSource;
    reply = connection_->Command(args);
  }
  absl::StatusOr<LeaseScript::Reply> lease =
      reply.ok() ? LeaseScript::Parse(reply->get(), want) : reply.status();
  if (reply.ok() && !lease.ok()) {
    lease = absl::UnavailableError(
        absl::StrCat("lease (", connection_->address(), "): ", lease.status().message()));
  }
  if (!lease.ok()) Disconnect();
  return lease;
}

}  // namespace resilience
