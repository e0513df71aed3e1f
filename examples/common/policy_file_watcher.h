// File: examples/common/policy_file_watcher.h
//
// Reloads a policy file when it changes, or when asked (SIGHUP), on a thread
// of its own: cache_server and `cache_client load` use it
// (docs/operations.md, "Reloading policies").
//
//   auto watcher = example_cli::PolicyFileWatcher::Start(
//       "policies.json", [&](absl::string_view why) { resilience->ReloadFile(path); });
//   ...
//   (*watcher)->Reload();  // SIGHUP, from the signal thread

#ifndef GRPC_RESILIENCE_EXAMPLES_COMMON_POLICY_FILE_WATCHER_H_
#define GRPC_RESILIENCE_EXAMPLES_COMMON_POLICY_FILE_WATCHER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace example_cli {

// PolicyFileWatcher
//
// Watches the directory of the file with inotify, because editors and
// deployment tools replace a file by renaming another over it (the file's
// own watch would follow the old inode): a file of that name closed after
// writing (IN_CLOSE_WRITE) or moved in (IN_MOVED_TO) is a change. Changes
// are collected until kSettle passes without another, then `reload` is
// called once (why: "file change"). Reload() has it called at once (why:
// "SIGHUP", the one reason a program asks).
// No polling: the thread sleeps in poll() until inotify or Reload() wakes
// it. `reload` runs on the watcher's thread, one call at a time. Thread-safe.
class PolicyFileWatcher {
 public:
  static constexpr absl::Duration kSettle = absl::Milliseconds(50);

  using ReloadFn = std::function<void(absl::string_view why)>;

  // Start()
  //
  // Watches `path`. Unavailable naming the directory and errno's words when
  // inotify cannot watch it.
  static absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> Start(std::string path,
                                                                  ReloadFn reload);

  // Stops the thread (a reload running finishes first).
  ~PolicyFileWatcher();

  PolicyFileWatcher(const PolicyFileWatcher&) = delete;
  PolicyFileWatcher& operator=(const PolicyFileWatcher&) = delete;

  // Reload()
  //
  // Asks for a reload now (e.g. SIGHUP), on the watcher's thread; returns
  // at once. Safe from any thread but a signal handler.
  void Reload();

 private:
  PolicyFileWatcher(std::string path, ReloadFn reload, int inotify_fd, int wake_read,
                    int wake_write);
  void Run();

  const std::string path_;
  const std::string name_;  // the file's name in its directory
  const ReloadFn reload_;
  const int inotify_fd_;
  const int wake_read_;   // a pipe: 'R' reload, 'Q' quit
  const int wake_write_;
  std::thread thread_;
};

}  // namespace example_cli

#endif  // GRPC_RESILIENCE_EXAMPLES_COMMON_POLICY_FILE_WATCHER_H_
