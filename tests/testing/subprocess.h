// File: tests/testing/subprocess.h
//
// Runs the project's built binaries as a user would, for end-to-end tests:
// with arguments, bytes on stdin, and a time limit, capturing stdout, stderr
// and the exit status.

#ifndef GRPC_RESILIENCE_TESTS_TESTING_SUBPROCESS_H_
#define GRPC_RESILIENCE_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace resilience::testing {

struct CommandResult {
  // The exit code, or -N when killed by signal N.
  int exit_code = -1;
  std::string out;
  std::string err;
  bool timed_out = false;
};

// Subprocess
//
// A child process with pipes to its stdin, stdout and stderr. The destructor
// kills (SIGKILL) and reaps a child that is still running. Not thread-safe.
class Subprocess {
 public:
  // Start()
  //
  // Starts argv[0] (a path) with `argv`. An error if it cannot be started.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const std::vector<std::string>& argv);

  ~Subprocess();

  pid_t pid() const { return pid_; }

  // ReadLine()
  //
  // The next line of stdout without its newline, waiting up to `timeout`;
  // nullopt on time-out or end of output.
  std::optional<std::string> ReadLine(absl::Duration timeout);

  // Signal()
  //
  // Sends `signal_number` to the child.
  void Signal(int signal_number);

  // Finish()
  //
  // Writes `input` to stdin, closes it, reads stdout and stderr to the end and
  // reaps the child, all within `timeout`; past it the child is killed and
  // `timed_out` is set.
  CommandResult Finish(const std::string& input, absl::Duration timeout);

 private:
  Subprocess() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string stdout_buffer_;  // read by ReadLine() but not yet returned
};

// RunCommand()
//
// Start() + Finish(); a start failure is reported as exit code 127 with the
// reason on `err`.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "",
                         absl::Duration timeout = absl::Seconds(30));

// A server started by StartListening().
struct ListeningProcess {
  std::unique_ptr<Subprocess> process;
  std::string address;  // "HOST:PORT", from its first line
};

// StartListening()
//
// Starts a server (cache_server) whose first line on stdout is
// "listening on HOST:PORT", within 10 s. An error, naming what went wrong,
// when it cannot start or its first line is not that.
absl::StatusOr<ListeningProcess> StartListening(const std::vector<std::string>& argv);

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_SUBPROCESS_H_
