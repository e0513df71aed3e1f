#include "src/redis_limits/redis_connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <cerrno>
#include <utility>

#include "src/core/clock.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace resilience {

void RedisReplyDeleter::operator()(redisReply* r) const {
  if (r != nullptr) freeReplyObject(r);
}

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const std::string& host, int port, absl::Duration timeout) {
  std::string address = absl::StrCat(host, ":", port);
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, absl::ToTimeval(timeout));
  if (c == nullptr) {
    return absl::UnavailableError(absl::StrCat("connect to ", address, ": no memory"));
  }
  if (c->err != 0) {
    // hiredis says strerror(ETIMEDOUT) when the connect ran out of time.
    const bool timed_out = absl::StrContains(c->errstr, "timed out");
    absl::Status s =
        timed_out ? absl::DeadlineExceededError(absl::StrCat(
                        "connect timed out after ", absl::FormatDuration(timeout), " (", address, ")"))
                  : absl::UnavailableError(absl::StrCat("connect to ", address, ": ", c->errstr));
    redisFree(c);
    return s;
  }
  return std::unique_ptr<RedisConnection>(new RedisConnection(c, std::move(address), timeout));
}

RedisConnection::~RedisConnection() { redisFree(context_); }

int RedisConnection::fd() const { return context_->fd; }

absl::Status RedisConnection::IoError(const char* what) const {
  return absl::UnavailableError(
      absl::StrCat(what, " (", address_, "): ", context_->err != 0 ? context_->errstr : "error"));
}

absl::Status RedisConnection::Wait(short events, absl::Time deadline, const char* what) const {
  // Bounded: each pass either returns or waits out part of the time left.
  while (true) {
    const absl::Duration left = deadline - Clock::Real().Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, " timed out after ", absl::FormatDuration(timeout_), " (", address_, ")"));
    }
    pollfd p = {context_->fd, events, 0};
    const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
    const int n = poll(&p, 1, static_cast<int>(ms));
    if (n > 0) return absl::OkStatus();  // ready, or an error the next I/O reports
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat(what, " (", address_, "): poll failed"));
    }
  }
}

absl::StatusOr<RedisReply> RedisConnection::Command(const std::vector<std::string>& args) {
  // Socket timeouts: real monotonic time, immune to clock steps.
  const absl::Time deadline = Clock::Real().Now() + timeout_;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  const char* what = args.empty() ? "command" : args[0].c_str();
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(),
                             lens.data()) != REDIS_OK) {
    return IoError(what);
  }
  // A command of a few kB: a handful of writes at most.
  for (int done = 0; !done;) {
    if (absl::Status s = Wait(POLLOUT, deadline, what); !s.ok()) return s;
    if (redisBufferWrite(context_, &done) != REDIS_OK) return IoError(what);
  }
  // Each pass reads at least a byte or waits out part of the time left.
  while (true) {
    void* reply = nullptr;
    if (redisGetReplyFromReader(context_, &reply) != REDIS_OK) return IoError(what);
    if (reply != nullptr) return RedisReply(static_cast<redisReply*>(reply));
    if (absl::Status s = Wait(POLLIN, deadline, what); !s.ok()) return s;
    if (redisBufferRead(context_) != REDIS_OK) return IoError(what);
  }
}

absl::Status RedisConnection::Authenticate(const std::string& username,
                                           const std::string& password,
                                           const std::string& credentials) {
  std::vector<std::string> args = {"AUTH"};
  if (!username.empty()) args.push_back(username);
  args.push_back(password);
  absl::StatusOr<RedisReply> reply = Command(args);
  if (!reply.ok()) return reply.status();  // its message names the command only
  if ((*reply)->type != REDIS_REPLY_ERROR) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "AUTH", username.empty() ? "" : absl::StrCat(" as user '", username, "'"),
      " with the password of ", credentials, " refused by ", address_, ": ",
      absl::string_view((*reply)->str, (*reply)->len)));
}

}  // namespace resilience
