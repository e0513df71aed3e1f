#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace resilience::testing {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int RemainingMillis(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::unique_ptr<Subprocess> p(new Subprocess());
  const int rc = posix_spawn(&p->pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  p->stdin_fd_ = in[1];
  p->stdout_fd_ = out[0];
  p->stderr_fd_ = err[0];
  if (rc != 0) {
    p->pid_ = -1;
    return absl::NotFoundError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(rc)));
  }
  // A child that exits early must not kill the test with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  return p;
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  CloseFd(stdin_fd_);
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

std::optional<std::string> Subprocess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = stdout_buffer_.substr(0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return line;
    }
    pollfd pfd{stdout_fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, RemainingMillis(deadline));
    if (ready <= 0) return std::nullopt;
    char chunk[4096];
    const ssize_t n = read(stdout_fd_, chunk, sizeof(chunk));
    if (n <= 0) return std::nullopt;
    stdout_buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Subprocess::Signal(int signal_number) {
  if (pid_ > 0) kill(pid_, signal_number);
}

CommandResult Subprocess::Finish(const std::string& input, absl::Duration timeout) {
  CommandResult result;
  result.out = std::move(stdout_buffer_);
  stdout_buffer_.clear();
  const absl::Time deadline = absl::Now() + timeout;
  size_t written = 0;
  if (input.empty()) CloseFd(stdin_fd_);
  while (stdin_fd_ >= 0 || stdout_fd_ >= 0 || stderr_fd_ >= 0) {
    pollfd fds[3];
    int n = 0;
    if (stdin_fd_ >= 0) fds[n++] = {stdin_fd_, POLLOUT, 0};
    if (stdout_fd_ >= 0) fds[n++] = {stdout_fd_, POLLIN, 0};
    if (stderr_fd_ >= 0) fds[n++] = {stderr_fd_, POLLIN, 0};
    const int ready = poll(fds, n, RemainingMillis(deadline));
    if (ready <= 0) {
      result.timed_out = true;
      kill(pid_, SIGKILL);
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == stdin_fd_) {
        const ssize_t w = write(stdin_fd_, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) CloseFd(stdin_fd_);
        continue;
      }
      char chunk[4096];
      const ssize_t r = read(fds[i].fd, chunk, sizeof(chunk));
      if (r <= 0) {
        if (fds[i].fd == stdout_fd_) CloseFd(stdout_fd_); else CloseFd(stderr_fd_);
        continue;
      }
      (fds[i].fd == stdout_fd_ ? result.out : result.err).append(chunk, static_cast<size_t>(r));
    }
  }
  CloseFd(stdin_fd_);
  // The child may close its output before it exits: wait for it within the
  // same deadline, then kill it.
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() >= deadline) {
      result.timed_out = true;
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  pid_ = -1;
  result.exit_code = DecodeWaitStatus(status);
  return result;
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                         absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(argv);
  if (!p.ok()) {
    CommandResult result;
    result.exit_code = 127;
    result.err = p.status().ToString();
    return result;
  }
  return (*p)->Finish(input, timeout);
}

absl::StatusOr<ListeningProcess> StartListening(const std::vector<std::string>& argv) {
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(argv);
  if (!started.ok()) return started.status();
  ListeningProcess server;
  server.process = *std::move(started);
  const std::optional<std::string> line = server.process->ReadLine(absl::Seconds(10));
  if (!line.has_value()) {
    return absl::UnavailableError(absl::StrCat(argv[0], " printed no first line"));
  }
  if (!absl::StartsWith(*line, "listening on ")) {
    return absl::UnavailableError(
        absl::StrCat(argv[0], ": first line \"", *line, "\" is not \"listening on HOST:PORT\""));
  }
  server.address = line->substr(std::string("listening on ").size());
  return server;
}

}  // namespace resilience::testing
