#include "bench/retry_cost_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/retry_cost_channels.h"

namespace retry_cost {

absl::Status WriteFile(const std::string& path, absl::string_view text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary,
                                                                    const std::string& policy_path,
                                                                    const std::string& log_path) {
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cache_server not found or not executable: ", binary,
                     " (build target grpc_resilience_cache_server, or pass --server)"));
  }
  // Everything the child needs is prepared before fork(): between fork()
  // and exec() a child of this multithreaded process may only make
  // async-signal-safe calls.
  std::vector<std::string> args = {binary, "--port=0",
                                   // Nothing is in flight when we stop it.
                                   "--grace_period=0s"};
  if (!policy_path.empty()) args.push_back(absl::StrCat("--policy=", policy_path));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", log_path));
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(log_fd);
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::ErrnoToStatus(errno, "fork");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the parent died before prctl()
    dup2(out_pipe[1], STDOUT_FILENO);     // dup2 clears O_CLOEXEC on the copy
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  close(out_pipe[1]);
  std::unique_ptr<ServerProcess> server(new ServerProcess(pid, out_pipe[0], log_path));
  absl::StatusOr<std::string> address = server->ReadListeningAddress(absl::Seconds(10));
  if (!address.ok()) return server->StartFailure(address.status().message());
  server->address_ = *std::move(address);
  return server;
}

absl::StatusOr<std::string> ServerProcess::ReadListeningAddress(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (line.find('\n') == std::string::npos) {
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    pollfd p = {stdout_fd_, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return absl::DeadlineExceededError("no \"listening on\" line within 10 s");
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("it exited before printing \"listening on\"");
    line.append(buffer, static_cast<size_t>(n));
  }
  line.resize(line.find('\n'));
  absl::string_view address = line;
  if (!absl::ConsumePrefix(&address, "listening on ") || address.empty()) {
    return absl::InternalError(absl::StrCat("unexpected first line: \"", line, "\""));
  }
  return std::string(address);
}

absl::Status ServerProcess::StartFailure(absl::string_view what) {
  Stop();
  return absl::UnavailableError(
      absl::StrCat("cache_server did not start: ", what, "; its stderr:\n", ReadFile(log_path_)));
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      std::fprintf(stderr, "cache_server (pid %d) ignored SIGTERM for 10 s; killing it\n", pid_);
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  close(stdout_fd_);
}

// The server's policy: Get aborted with UNAVAILABLE for `abort_fraction` of
// the calls (Store is untouched, so the keys can be stored); "" (no policy
// file) when nothing is to fail.
absl::StatusOr<std::string> WriteFaultPolicy(const TempDir& dir, double abort_fraction) {
  if (abort_fraction <= 0) return std::string();
  const std::string path = dir.File(absl::StrCat("faults_", abort_fraction, ".json"));
  const std::string json = absl::StrFormat(
      R"({"methodConfig": [{"name": [%s], "faultInjection": {"abortCode": "UNAVAILABLE", )"
      R"("abortFraction": %.6f}}]})",
      kGetName, abort_fraction);
  if (absl::Status s = WriteFile(path, json); !s.ok()) return s;
  return path;
}

std::string DefaultServerPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "cache_server";
  // <build>/bench/retry_cost_bench -> <build>/examples/cache_service/cache_server
  return (self.parent_path().parent_path() / "examples" / "cache_service" / "cache_server")
      .string();
}

}  // namespace retry_cost
