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

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace example_cli {

// PolicyFileWatcher
//
// Watches, with inotify, every directory on the way to the file, following
// each symlink (the path, a directory on it, a link's target) as the kernel
// does: a name on that way that is created, renamed over, moved away or
// removed, a directory on it that is moved or removed, or the file closed
// after writing (IN_CLOSE_WRITE) is a change. So are an editor's rename of a
// new file over it, a Kubernetes ConfigMap update (`..data` swapped by a
// rename of `..data_tmp` over it: policy.json -> ..data/policy.json) and a
// directory on the way replaced. Changes are collected until kSettle passes
// without another; then the watches are set again on the way as it now is
// (the new directories, the new links' targets), and `reload` is called
// once (why: "file change") if the file exists and was written or is
// another file (device, inode, size or modification time) than at the last
// reload. A regular file being created is reloaded once closed. Reload()
// has it called at once (why: "SIGHUP", the one reason a program asks).
// No polling: the thread sleeps in poll() until inotify or Reload() wakes
// it. `reload` runs on the watcher's thread, one call at a time. Thread-safe.
class PolicyFileWatcher {
 public:
  static constexpr absl::Duration kSettle = absl::Milliseconds(50);

  using ReloadFn = std::function<void(absl::string_view why)>;

  // Start()
  //
  // Watches `path` (the file need not exist yet). Unavailable naming the
  // directory and errno's words when inotify can watch no directory on the
  // way.
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
  // The names one watched directory holds on the way to the file.
  struct Watched {
    std::string directory;
    std::set<std::string> names;
    std::string file;  // the file's own name when it is here; else ""
  };
  // Which file the path reaches: device, inode, size, modification time.
  using FileId = std::tuple<dev_t, ino_t, off_t, int64_t>;

  PolicyFileWatcher(std::string path, ReloadFn reload, int inotify_fd, int wake_read,
                    int wake_write);
  // Watches the directories on the way as it is now and forgets the others;
  // false when one vanished meanwhile (arm again after kSettle).
  bool Arm();
  std::optional<FileId> Identify() const;
  // Reads the pending events; whether one is a change (`written`: the file
  // itself was closed after writing, or events were lost).
  bool ReadEvents(bool& written);
  void Run();

  const std::string path_;
  const ReloadFn reload_;
  const int inotify_fd_;
  const int wake_read_;   // a pipe: 'R' reload, 'Q' quit
  const int wake_write_;
  // Only Start() before the thread starts, then only the thread.
  std::map<int, Watched> watches_;  // by inotify watch descriptor
  std::string arm_error_;           // why the last Arm() watched nothing
  std::optional<FileId> reloaded_;  // the file at the last reload (or Start)
  std::thread thread_;
};

}  // namespace example_cli

#endif  // GRPC_RESILIENCE_EXAMPLES_COMMON_POLICY_FILE_WATCHER_H_
