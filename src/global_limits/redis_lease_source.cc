#include "grpc_resilience/internal/global_limits/redis_lease_source.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

// The reply as text for a message: an error reply's or the context's.
std::string ErrorOf(redisContext* c, redisReply* reply) {
  if (reply == nullptr) {
    return c->err != 0 ? std::string(c->errstr) : std::string("no reply");
  }
  if (reply->type == REDIS_REPLY_ERROR) return std::string(reply->str, reply->len);
  return absl::StrCat("unexpected reply type ", reply->type);
}

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

Reply Command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
}

}  // namespace

// Numbers in the hash are written with 17 significant digits: Lua's own
// tostring() keeps 14, too few for microsecond timestamps.
const char RedisLeaseSource::kLeaseScript[] = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local s = redis.call('HMGET', KEYS[1], 'tokens', 'us')
local tokens = tonumber(s[1])
local last = tonumber(s[2])
if tokens == nil or last == nil then
  tokens = burst
  last = now
end
if now > last then
  tokens = math.min(burst, tokens + (now - last) * rate / 1000000)
  last = now
end
local granted = math.floor(math.min(want, tokens))
if granted < 0 then granted = 0 end
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'us', string.format('%.17g', last))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {granted, string.format('%.17g', tokens)}
)lua";

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
  const absl::Time until = absl::Now() + d;
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (wakeable && woken_.exchange(false, std::memory_order_acq_rel)) return true;
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) return true;
    cv_.WaitWithTimeout(&mu_, left);
  }
  return false;
}

absl::Status RedisLeaseSource::Connect() {
  redisContext* c =
      redisConnectWithTimeout(options_.host.c_str(), options_.port, absl::ToTimeval(options_.timeout));
  if (c == nullptr) return absl::UnavailableError("cannot allocate a Redis context");
  if (c->err != 0) {
    absl::Status s = absl::UnavailableError(c->errstr);
    redisFree(c);
    return s;
  }
  {
    MutexLock lock(&mu_);
    if (stopping_) {
      redisFree(c);
      return absl::CancelledError("stopping");
    }
    context_ = c;
    fd_ = c->fd;
  }
  if (redisSetTimeout(c, absl::ToTimeval(options_.timeout)) != REDIS_OK) {
    return absl::UnavailableError("cannot set the command timeout");
  }
  Reply reply = Command(c, {"SCRIPT", "LOAD", kLeaseScript});
  if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
    return absl::UnavailableError(absl::StrCat("SCRIPT LOAD: ", ErrorOf(c, reply.get())));
  }
  sha_.assign(reply->str, reply->len);
  return absl::OkStatus();
}

void RedisLeaseSource::Disconnect() {
  redisContext* c = nullptr;
  {
    MutexLock lock(&mu_);
    c = context_;
    context_ = nullptr;
    fd_ = -1;
  }
  if (c != nullptr) redisFree(c);
}

absl::Status RedisLeaseSource::Lease(int64_t want, int64_t* granted, double* remaining) {
  const double rate = limiter_.options().rate_per_second;
  const int64_t burst = limiter_.options().burst;
  // The key outlives a full refill by a second, then goes: a full bucket.
  const double refill_ms = std::ceil(static_cast<double>(burst) / rate * 1000.0) + 1000.0;
  const std::string ttl = absl::StrFormat("%.0f", std::min(refill_ms, 1e15));
  const std::vector<std::string> args = {
      "EVALSHA", sha_, "1", options_.key, absl::StrFormat("%.17g", rate), absl::StrCat(burst),
      absl::StrCat(want), ttl};
  Reply reply = Command(context_, args);
  if (reply != nullptr && reply->type == REDIS_REPLY_ERROR &&
      absl::StartsWith(absl::string_view(reply->str, reply->len), "NOSCRIPT")) {
    // Redis restarted or flushed its scripts: EVAL runs and caches it again.
    std::vector<std::string> eval = args;
    eval[0] = "EVAL";
    eval[1] = kLeaseScript;
    reply = Command(context_, eval);
  }
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
      reply->element[0]->type != REDIS_REPLY_INTEGER ||
      reply->element[1]->type != REDIS_REPLY_STRING) {
    return absl::UnavailableError(absl::StrCat("lease: ", ErrorOf(context_, reply.get())));
  }
  *granted = std::clamp<int64_t>(reply->element[0]->integer, 0, want);
  if (!absl::SimpleAtod(absl::string_view(reply->element[1]->str, reply->element[1]->len),
                        remaining)) {
    *remaining = 0;
  }
  return absl::OkStatus();
}

void RedisLeaseSource::Run() {
  // A write to a socket Redis closed raises SIGPIPE on this thread: blocked
  // here, it stays pending (and is cleared) instead of ending the process.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

  absl::Duration backoff = options_.min_backoff;
  while (true) {
    if (context_ == nullptr) {
      absl::Status s = Connect();
      if (!s.ok()) {
        DropPendingSigpipe();
        Disconnect();
        {
          // Broken off by the destructor: not Redis's failure.
          MutexLock lock(&mu_);
          if (stopping_) return;
        }
        limiter_.OnFailure(absl::StrCat("connect to ", options_.host, ":", options_.port, ": ",
                                        s.message()));
        if (!Pause(backoff, /*wakeable=*/false)) return;
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
    }
    const int64_t want = limiter_.LeaseWanted();
    if (want == 0) {
      if (!Pause(limiter_.options().lease_interval, /*wakeable=*/true)) return;
      continue;
    }
    int64_t granted = 0;
    double remaining = 0;
    absl::Status s = Lease(want, &granted, &remaining);
    if (!s.ok()) {
      DropPendingSigpipe();
      Disconnect();
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
      }
      limiter_.OnFailure(s.message());
      if (!Pause(backoff, /*wakeable=*/false)) return;
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    backoff = options_.min_backoff;
    limiter_.OnLease(want, granted, remaining);
    // The fleet's bucket is dry: wait for it rather than ask again at once.
    if (granted < want && !Pause(limiter_.DryWait(), /*wakeable=*/false)) return;
  }
}

}  // namespace resilience
