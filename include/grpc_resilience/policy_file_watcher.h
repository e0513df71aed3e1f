/// \file include/grpc_resilience/policy_file_watcher.h
///
/// Reloads a policy file into the process's ClientResilience and
/// ServerResilience objects when it changes (inotify, following symlinks:
/// editors' saves, Kubernetes ConfigMap updates, a replaced directory) and
/// when asked (e.g. on SIGHUP), on a thread of its own. No gRPC here: the
/// objects are reached through their ReloadFile().
///
/// \code
///   absl::StatusOr<std::unique_ptr<resilience::PolicyFileWatcher>> watcher =
///       resilience::PolicyFileWatcher::StartReloading(
///           "/etc/svc/policies.json", {}, channel.resilience, server_resilience);
///   if (!watcher.ok()) std::cerr << "not reloaded on change: " << watcher.status() << "\n";
///   ...
///   (*watcher)->Reload();  // from the thread that takes SIGHUP
/// \endcode
///
/// docs/operations.md, "Reloading policies".

#ifndef GRPC_RESILIENCE_POLICY_FILE_WATCHER_H_
#define GRPC_RESILIENCE_POLICY_FILE_WATCHER_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_update.h"

namespace resilience {

/// PolicyFileWatcher
///
/// Watches, with inotify, every directory on the way to the file, following
/// each symlink (the path, a directory on it, a link's target) as the kernel
/// does: a name on that way that is created, renamed over, moved away or
/// removed, a directory on it that is moved or removed, or the file closed
/// after writing (IN_CLOSE_WRITE) is a change. So are an editor's rename of a
/// new file over it, a Kubernetes ConfigMap update (`..data` swapped by a
/// rename of `..data_tmp` over it: policy.json -> ..data/policy.json) and a
/// directory on the way replaced. Changes are collected until kSettle passes
/// without another; then the watches are set again on the way as it now is
/// (the new directories, the new links' targets), and the file is reloaded
/// once (why: "file change") if it exists and was written or is another file
/// (device, inode, size or modification time) than at the last reload. A
/// regular file being created is reloaded once closed. Reload() reloads at
/// once (why: "SIGHUP", the one reason a program asks). No polling: the
/// thread sleeps in poll() until inotify or Reload() wakes it. Reloads run on
/// the watcher's thread, one at a time. Thread-safe.
class GRPC_RESILIENCE_EXPORT PolicyFileWatcher {
 public:
  /// How long changes are collected without another before one reload.
  static constexpr absl::Duration kSettle = absl::Milliseconds(50);

  /// What a reload does, told why ("file change", "SIGHUP").
  using ReloadFn = std::function<void(absl::string_view why)>;
  /// One object to reload the file into: its ReloadFile(path, options).
  using Target = std::function<absl::StatusOr<PolicyUpdate>(const std::string& path,
                                                            const PolicySetLoadOptions& options)>;

  /// What StartReloading() does with each reload.
  struct ReloadOptions {
    /// How each target loads the file (e.g. strict).
    PolicySetLoadOptions load;
    /// One line per reload ("file change: reloading /etc/svc/policies.json")
    /// and per warning of a target's update ("warning: ..."), without a
    /// newline; null: none. A file that fails to load is told by each
    /// target's events listener (LogEvents prints it), and the target keeps
    /// the policies in force.
    std::function<void(absl::string_view line)> log;
  };

  /// Start()
  ///
  /// Watches `path` (the file need not exist yet) and calls `reload` on each
  /// change and each Reload(). Unavailable naming the directory and errno's
  /// words when inotify can watch no directory on the way.
  static absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> Start(std::string path,
                                                                  ReloadFn reload);

  /// StartReloading()
  ///
  /// The one call a program makes: Start() with a reload that calls each
  /// target's ReloadFile(path, options.load), in the order given. Targets are
  /// pointers (shared or plain) to ClientResilience, ServerResilience or
  /// anything with their ReloadFile(); each must outlive the watcher.
  template <typename... Pointers>
  static absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> StartReloading(
      std::string path, ReloadOptions options, Pointers... targets) {
    std::vector<Target> list = {TargetOf(std::move(targets))...};
    return StartReloadingTargets(std::move(path), std::move(options), std::move(list));
  }
  /// StartReloading() with the targets as a list.
  static absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> StartReloadingTargets(
      std::string path, ReloadOptions options, std::vector<Target> targets);

  /// Stops the thread (a reload running finishes first).
  ~PolicyFileWatcher();

  PolicyFileWatcher(const PolicyFileWatcher&) = delete;
  PolicyFileWatcher& operator=(const PolicyFileWatcher&) = delete;

  /// Reload()
  ///
  /// Asks for a reload now (e.g. SIGHUP), on the watcher's thread; returns
  /// at once. Safe from any thread but a signal handler.
  void Reload();

 private:
  class Impl;
  explicit PolicyFileWatcher(std::unique_ptr<Impl> impl);

  template <typename Pointer>
  static Target TargetOf(Pointer target) {
    return [target = std::move(target)](const std::string& path,
                                        const PolicySetLoadOptions& options) {
      return target->ReloadFile(path, options);
    };
  }

  std::unique_ptr<Impl> impl_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_POLICY_FILE_WATCHER_H_
