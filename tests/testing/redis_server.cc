#include "tests/testing/redis_server.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace resilience::testing {

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError("bind() to 127.0.0.1:0 failed");
  }
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& binary,
                                                                absl::Duration ready_within) {
  return Start(binary, Options(), ready_within);
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& binary,
                                                                Options options,
                                                                absl::Duration ready_within) {
  absl::StatusOr<int> port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  std::unique_ptr<RedisServer> server(new RedisServer(binary, std::move(options), *port));
  if (absl::Status s = server->Launch(ready_within); !s.ok()) return s;
  return server;
}

absl::Status RedisServer::Launch(absl::Duration ready_within) {
  std::vector<std::string> argv = {binary_, "--port", std::to_string(port_), "--bind",
                                   "127.0.0.1", "--save", "", "--appendonly", "no",
                                   "--logfile", "/dev/null", "--daemonize", "no"};
  if (!options_.password.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(options_.password);
  }
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Start(argv);
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  const absl::Time deadline = absl::Now() + ready_within;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> pong = Command({"PING"});
    if (pong.ok() && *pong == "PONG") return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("redis-server on port ", port_, " did not answer PING within ",
                   absl::FormatDuration(ready_within)));
}

void RedisServer::Kill() { process_.reset(); }  // SIGKILL and reap

absl::Status RedisServer::Restart(absl::Duration ready_within) {
  Kill();
  return Launch(ready_within);
}

namespace {

// One command on `c`; the reply as RedisServer::Command() gives it.
absl::StatusOr<std::string> CommandOn(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  absl::StatusOr<std::string> result = absl::UnavailableError(c->errstr);
  if (reply != nullptr) {
    switch (reply->type) {
      case REDIS_REPLY_INTEGER:
        result = std::to_string(reply->integer);
        break;
      case REDIS_REPLY_ERROR:
        result = absl::FailedPreconditionError(std::string(reply->str, reply->len));
        break;
      case REDIS_REPLY_NIL:
        result = std::string();
        break;
      default:
        result = reply->str != nullptr ? std::string(reply->str, reply->len) : std::string();
    }
    freeReplyObject(reply);
  }
  return result;
}

}  // namespace

absl::StatusOr<std::string> RedisServer::Command(const std::vector<std::string>& args) {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{1, 0});
  if (c == nullptr || c->err != 0) {
    std::string error = c != nullptr ? c->errstr : "no context";
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(error);
  }
  redisSetTimeout(c, timeval{1, 0});
  absl::StatusOr<std::string> result = std::string();
  if (!options_.password.empty()) result = CommandOn(c, {"AUTH", options_.password});
  if (result.ok()) result = CommandOn(c, args);
  redisFree(c);
  return result;
}

}  // namespace resilience::testing
