// retry_cost_bench's server: a cache_server in a process of its own, and the
// temporary directory of its policy files and logs.

#ifndef GRPC_RESILIENCE_BENCH_RETRY_COST_SERVER_H_
#define GRPC_RESILIENCE_BENCH_RETRY_COST_SERVER_H_

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace retry_cost {

// A directory for the server's policy files and logs, removed at the end.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    std::string pattern = (std::filesystem::temp_directory_path() / "retry_cost_bench.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::ErrnoToStatus(errno, "mkdtemp");
    }
    return TempDir(std::move(pattern));
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

  std::string File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::Status WriteFile(const std::string& path, absl::string_view text);
std::string ReadFile(const std::string& path);

// ServerProcess
//
// A cache_server child process on a port it picks itself (--port=0); its
// stdout is a pipe we read the "listening on HOST:PORT" line from, its
// stderr goes to a log file (shown when it fails to start). Stopped by
// Stop() or the destructor: SIGTERM, then SIGKILL if it has not exited
// within 10 s. The child also gets SIGTERM should this process die first
// (PR_SET_PDEATHSIG), so no server outlives an interrupted run.
class ServerProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& binary,
                                                              const std::string& policy_path,
                                                              const std::string& log_path);
  ~ServerProcess() { Stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& address() const { return address_; }
  void Stop();

 private:
  ServerProcess(pid_t pid, int stdout_fd, std::string log_path)
      : pid_(pid), stdout_fd_(stdout_fd), log_path_(std::move(log_path)) {}
  absl::StatusOr<std::string> ReadListeningAddress(absl::Duration timeout);
  // The start failed: stop the child and describe why, with its log.
  absl::Status StartFailure(absl::string_view what);

  pid_t pid_;
  int stdout_fd_;
  std::string log_path_;
  std::string address_;
};

// The server's policy: Get aborted with UNAVAILABLE for `abort_fraction` of
// the calls (Store is untouched, so the keys can be stored); "" (no policy
// file) when nothing is to fail.
absl::StatusOr<std::string> WriteFaultPolicy(const TempDir& dir, double abort_fraction);

// <build>/examples/cache_service/cache_server, beside this binary's
// <build>/bench/.
std::string DefaultServerPath();

}  // namespace retry_cost

#endif  // GRPC_RESILIENCE_BENCH_RETRY_COST_SERVER_H_
