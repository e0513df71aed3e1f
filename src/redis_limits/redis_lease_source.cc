#include "src/redis_limits/redis_lease_source.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "src/core/clock.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

// Clears a SIGPIPE left pending on this thread (where it is blocked) by a
// write to a socket Redis closed.
void DropPendingSigpipe() {
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

absl::string_view ErrorText(const redisReply& reply) {
  return reply.type == REDIS_REPLY_ERROR ? absl::string_view(reply.str, reply.len)
                                         : absl::string_view("unexpected reply");
}

}  // namespace

RedisLeaseSource::RedisLeaseSource(Options options, GlobalRateLimiter& limiter)
    : options_(std::move(options)), limiter_(limiter) {
  thread_ = std::thread([this] { Run(); });
}

RedisLeaseSource::~RedisLeaseSource() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    // Breaks off a round trip in progress: its read or write fails at once.
    if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
    cv_.SignalAll();
  }
  thread_.join();
  Disconnect();
}

void RedisLeaseSource::Wake() {
  if (woken_.load(std::memory_order_relaxed)) return;
  if (woken_.exchange(true, std::memory_order_acq_rel)) return;
  MutexLock lock(&mu_);
  cv_.Signal();
}

bool RedisLeaseSource::Pause(absl::Duration d, bool wakeable) {
  // A real wait on a condition variable: real monotonic time.
  const absl::Time until = Clock::Real().Now() + d;
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (wakeable && woken_.exchange(false, std::memory_order_acq_rel)) return true;
    const absl::Duration left = until - Clock::Real().Now();
    if (left <= absl::ZeroDuration()) return true;
    cv_.WaitWithTimeout(&mu_, left);
  }
  return false;
}

bool RedisLeaseSource::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

absl::Status RedisLeaseSource::Connect() {
  absl::StatusOr<std::unique_ptr<RedisConnection>> c =
      RedisConnection::Connect(options_.host, options_.port, options_.timeout);
  if (!c.ok()) return c.status();
  {
    MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("stopping");
    fd_ = (*c)->fd();
    connection_ = *std::move(c);
  }
  if (absl::Status s = Authenticate(*connection_); !s.ok()) return s;
  absl::StatusOr<RedisReply> reply =
      connection_->Command({"SCRIPT", "LOAD", LeaseScript::kSource});
  if (!reply.ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_STRING) {
    const absl::string_view error = ErrorText(**reply);
    const bool no_auth = absl::StartsWith(error, "NOAUTH") && !options_.password;
    return absl::UnavailableError(absl::StrCat(
        "SCRIPT LOAD (", connection_->address(), "): ", error,
        no_auth ? " (the policy sets neither passwordEnv nor passwordFile)" : ""));
  }
  sha_.assign((*reply)->str, (*reply)->len);
  return absl::OkStatus();
}

absl::Status RedisLeaseSource::Authenticate(RedisConnection& connection) {
  if (!options_.password) return absl::OkStatus();
  // Asked for at each connect: a rotated password file is read again.
  absl::StatusOr<std::string> password = options_.password();
  if (!password.ok()) return password.status();
  return connection.Authenticate(options_.username, *password, options_.credentials);
}

void RedisLeaseSource::Disconnect() {
  std::unique_ptr<RedisConnection> c;
  {
    MutexLock lock(&mu_);
    c = std::move(connection_);
    fd_ = -1;
  }
}

absl::StatusOr<LeaseScript::Reply> RedisLeaseSource::Lease(int64_t want) {
  std::vector<std::string> args = {"EVALSHA", sha_};
  for (std::string& a : LeaseScript::Args(options_.key, limiter_.options().rate_per_second,
                                          limiter_.options().burst, want, leased_before_)) {
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
  if (!reply.ok()) return reply.status();
  absl::StatusOr<LeaseScript::Reply> lease = LeaseScript::Parse(reply->get(), want);
  if (!lease.ok()) {
    return absl::UnavailableError(
        absl::StrCat("lease (", connection_->address(), "): ", lease.status().message()));
  }
  return lease;
}

void RedisLeaseSource::Run() {
  // A write to a socket Redis closed raises SIGPIPE on this thread: blocked
  // here, it stays pending (and is cleared) instead of ending the process.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

  absl::Duration backoff = options_.min_backoff;
  // A failed connect or round trip: the connection goes, the limiter hears
  // why (unless the destructor broke it off), and the thread backs off.
  // False once stopping.
  auto fail = [&](const absl::Status& s) {
    DropPendingSigpipe();
    Disconnect();
    if (Stopping()) return false;
    limiter_.OnFailure(s.message());
    if (!Pause(backoff, /*wakeable=*/false)) return false;
    backoff = std::min(backoff * 2, options_.max_backoff);
    return true;
  };
  while (true) {
    if (connection_ == nullptr) {
      if (absl::Status s = Connect(); !s.ok()) {
        if (!fail(s)) return;
        continue;
      }
    }
    const int64_t want = limiter_.LeaseWanted();
    if (want == 0) {
      if (!Pause(limiter_.options().lease_interval, /*wakeable=*/true)) return;
      continue;
    }
    absl::StatusOr<LeaseScript::Reply> lease = Lease(want);
    if (!lease.ok()) {
      if (!fail(lease.status())) return;
      continue;
    }
    backoff = options_.min_backoff;
    leased_before_ = true;
    if (lease->repairs & LeaseScript::kKeyLost) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kKeyLost);
    }
    if (lease->repairs & LeaseScript::kBadValue) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kBadValue);
    }
    if (lease->repairs & LeaseScript::kClockBack) {
      limiter_.OnAnomaly(GlobalRateLimiter::Anomaly::kClockBack);
    }
    limiter_.OnLease(want, lease->granted, lease->remaining);
    // The fleet's bucket is dry: wait for it rather than ask again at once.
    if (lease->granted < want && !Pause(limiter_.DryWait(), /*wakeable=*/false)) return;
  }
}

}  // namespace resilience
