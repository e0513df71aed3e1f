#include "grpc_resilience/policy_file_watcher.h"

#include <fcntl.h>
#include <sys/types.h>
#include <limits.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace resilience {
namespace {

// What makes a watched directory's event a possible change (filtered by
// name in ReadEvents()).
constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                           IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
// As the kernel's own bound on the links one lookup follows.
constexpr int kMaxLinks = 40;

// One name looked up in a directory (a path with no symlink in it) on the
// way to the file.
struct Step {
  std::string directory;
  std::string name;
};

std::string Join(const std::string& directory, const std::string& name) {
  return directory == "/" ? absl::StrCat("/", name) : absl::StrCat(directory, "/", name);
}

std::string ParentOf(const std::string& directory) {
  const size_t slash = directory.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : directory.substr(0, slash);
}

std::deque<std::string> Components(absl::string_view path) {
  std::deque<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part != ".") parts.emplace_back(part);
  }
  return parts;
}

// The way to `path` (absolute) as the kernel walks it, through every
// symlink, up to the file or to the first name that is missing. `reached`:
// the last step is the file itself.
std::vector<Step> WayTo(const std::string& path, bool& reached) {
  std::vector<Step> way;
  reached = false;
  std::string directory = "/";
  std::deque<std::string> rest = Components(path);
  int links = 0;
  while (!rest.empty()) {
    std::string name = std::move(rest.front());
    rest.pop_front();
    if (name == "..") {
      directory = ParentOf(directory);
      continue;
    }
    way.push_back(Step{directory, name});
    const std::string here = Join(directory, name);
    struct stat st;
    if (lstat(here.c_str(), &st) != 0) return way;  // watched for its creation
    if (!S_ISLNK(st.st_mode)) {
      directory = here;
      reached = rest.empty();
      continue;
    }
    if (++links > kMaxLinks) return way;
    char target[PATH_MAX];
    const ssize_t n = readlink(here.c_str(), target, sizeof(target) - 1);
    if (n <= 0) return way;
    const absl::string_view link(target, static_cast<size_t>(n));
    if (link[0] == '/') directory = "/";
    std::deque<std::string> parts = Components(link);
    rest.insert(rest.begin(), parts.begin(), parts.end());
  }
  return way;
}

}  // namespace

// The watcher's state and thread: all of PolicyFileWatcher but its API.
class GRPC_RESILIENCE_NO_EXPORT PolicyFileWatcher::Impl {
 public:
  Impl(std::string path, ReloadFn reload, int inotify_fd, int wake_read, int wake_write)
      : path_(std::move(path)),
        reload_(std::move(reload)),
        inotify_fd_(inotify_fd),
        wake_read_(wake_read),
        wake_write_(wake_write) {}
  ~Impl();

  // Watches the way, then starts the thread; Unavailable when no directory
  // on the way can be watched.
  absl::Status Begin();
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
  // Only Begin() before the thread starts, then only the thread.
  std::map<int, Watched> watches_;  // by inotify watch descriptor
  std::string arm_error_;           // why the last Arm() watched nothing
  std::optional<FileId> reloaded_;  // the file at the last reload (or Start)
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> PolicyFileWatcher::Start(std::string path,
                                                                            ReloadFn reload) {
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) {
      return absl::UnavailableError(absl::StrCat("getcwd, for policy file \"", path,
                                                 "\": ", std::strerror(errno)));
    }
    path = Join(cwd, path);
  }
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("pipe2: ", std::strerror(error)));
  }
  auto impl = std::make_unique<Impl>(std::move(path), std::move(reload), fd, wake[0], wake[1]);
  if (absl::Status begun = impl->Begin(); !begun.ok()) return begun;
  return std::unique_ptr<PolicyFileWatcher>(new PolicyFileWatcher(std::move(impl)));
}

absl::Status PolicyFileWatcher::Impl::Begin() {
  Arm();
  if (watches_.empty()) {
    return absl::UnavailableError(
        arm_error_.empty() ? absl::StrCat("policy file \"", path_, "\" names no file to watch")
                           : arm_error_);
  }
  reloaded_ = Identify();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> PolicyFileWatcher::StartReloadingTargets(
    std::string path, ReloadOptions options, std::vector<Target> targets) {
  ReloadFn reload = [path, options = std::move(options),
                     targets = std::move(targets)](absl::string_view why) {
    if (options.log) options.log(absl::StrCat(why, ": reloading ", path));
    for (const Target& target : targets) {
      const absl::StatusOr<PolicyUpdate> done = target(path, options.load);
      if (!done.ok() || !options.log) continue;  // a failure: its events listener says why
      for (const std::string& warning : done->warnings) {
        options.log(absl::StrCat("warning: ", warning));
      }
    }
  };
  return Start(std::move(path), std::move(reload));
}

PolicyFileWatcher::PolicyFileWatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PolicyFileWatcher::~PolicyFileWatcher() = default;

void PolicyFileWatcher::Reload() { impl_->Reload(); }

PolicyFileWatcher::Impl::~Impl() {
  if (thread_.joinable()) {
    const char quit = 'Q';
    while (write(wake_write_, &quit, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  close(inotify_fd_);
  close(wake_read_);
  close(wake_write_);
}

void PolicyFileWatcher::Impl::Reload() {
  const char reload = 'R';
  while (write(wake_write_, &reload, 1) < 0 && errno == EINTR) {
  }
}

bool PolicyFileWatcher::Impl::Arm() {
  bool reached = false;
  const std::vector<Step> way = WayTo(path_, reached);
  std::map<int, Watched> next;
  bool vanished = false;
  for (size_t i = 0; i < way.size(); ++i) {
    const int wd = inotify_add_watch(inotify_fd_, way[i].directory.c_str(), kMask);
    if (wd < 0) {
      const int error = errno;
      vanished = vanished || error == ENOENT;
      arm_error_ = absl::StrCat("cannot watch directory \"", way[i].directory,
                                "\" on the way to policy file \"", path_,
                                "\": ", std::strerror(error));
      continue;
    }
    next[wd].directory = way[i].directory;
    next[wd].names.insert(way[i].name);
    if (reached && i + 1 == way.size()) next[wd].file = way[i].name;
  }
  // A directory no longer on the way: its events are ignored from now on.
  for (const auto& [wd, watched] : watches_) {
    if (next.find(wd) == next.end()) inotify_rm_watch(inotify_fd_, wd);
  }
  watches_ = std::move(next);
  return !vanished;
}

std::optional<PolicyFileWatcher::Impl::FileId> PolicyFileWatcher::Impl::Identify() const {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) return std::nullopt;
  return FileId(st.st_dev, st.st_ino, st.st_size,
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
}

bool PolicyFileWatcher::Impl::ReadEvents(bool& written) {
  bool change = false;
  alignas(inotify_event) char buffer[4096];
  ssize_t n;
  while ((n = read(inotify_fd_, buffer, sizeof(buffer))) > 0) {
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {  // events lost: anything may have changed
        change = written = true;
        continue;
      }
      const auto watched = watches_.find(event->wd);
      if (watched == watches_.end()) continue;  // no longer on the way
      if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
        change = true;  // a directory on the way moved or went
        continue;
      }
      if (event->len == 0 || watched->second.names.count(event->name) == 0) continue;
      if (event->mask & IN_CLOSE_WRITE) {
        change = true;
        if (watched->second.file == event->name) written = true;
        continue;
      }
      if ((event->mask & IN_CREATE) && !(event->mask & IN_ISDIR)) {
        // A regular file being written counts once closed (IN_CLOSE_WRITE).
        struct stat st;
        const std::string created = Join(watched->second.directory, event->name);
        if (lstat(created.c_str(), &st) == 0 && S_ISREG(st.st_mode)) continue;
      }
      change = true;
    }
  }
  return change;
}

void PolicyFileWatcher::Impl::Run() {
  bool changed = false;  // a change seen, not handled yet (settling)
  bool written = false;  // ... the file itself written among them
  for (;;) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    // Blocks until woken, but for kSettle after a change.
    const int ready =
        poll(fds, 2, changed ? static_cast<int>(absl::ToInt64Milliseconds(kSettle)) : -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // settled
      changed = !Arm();  // a directory vanished while being watched: again
      const std::optional<FileId> now = Identify();
      const bool reload = now.has_value() && (written || now != reloaded_);
      written = false;
      if (reload) {
        reloaded_ = now;
        reload_("file change");
      }
      continue;
    }
    if (fds[1].revents & POLLIN) {
      char command = 0;
      if (read(wake_read_, &command, 1) == 1) {
        if (command == 'Q') return;
        Arm();
        reloaded_ = Identify();
        reload_("SIGHUP");
      }
    }
    if ((fds[0].revents & POLLIN) && ReadEvents(written)) changed = true;
  }
}

}  // namespace resilience
