#include "examples/common/policy_file_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace example_cli {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string NameOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicyFileWatcher>> PolicyFileWatcher::Start(std::string path,
                                                                            ReloadFn reload) {
  const std::string directory = DirectoryOf(path);
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  if (inotify_add_watch(fd, directory.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot watch directory \"", directory,
                                               "\" of policy file \"", path,
                                               "\": ", std::strerror(error)));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("pipe2: ", std::strerror(error)));
  }
  return std::unique_ptr<PolicyFileWatcher>(
      new PolicyFileWatcher(std::move(path), std::move(reload), fd, wake[0], wake[1]));
}

PolicyFileWatcher::PolicyFileWatcher(std::string path, ReloadFn reload, int inotify_fd,
                                     int wake_read, int wake_write)
    : path_(std::move(path)),
      name_(NameOf(path_)),
      reload_(std::move(reload)),
      inotify_fd_(inotify_fd),
      wake_read_(wake_read),
      wake_write_(wake_write) {
  thread_ = std::thread([this] { Run(); });
}

PolicyFileWatcher::~PolicyFileWatcher() {
  const char quit = 'Q';
  while (write(wake_write_, &quit, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  close(inotify_fd_);
  close(wake_read_);
  close(wake_write_);
}

void PolicyFileWatcher::Reload() {
  const char reload = 'R';
  while (write(wake_write_, &reload, 1) < 0 && errno == EINTR) {
  }
}

void PolicyFileWatcher::Run() {
  bool changed = false;  // a change seen, not reloaded yet (settling)
  for (;;) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    // Blocks until woken, but for kSettle after a change.
    const int ready =
        poll(fds, 2, changed ? static_cast<int>(absl::ToInt64Milliseconds(kSettle)) : -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // settled
      changed = false;
      reload_("file change");
      continue;
    }
    if (fds[1].revents & POLLIN) {
      char command = 0;
      if (read(wake_read_, &command, 1) == 1) {
        if (command == 'Q') return;
        reload_("SIGHUP");
      }
    }
    if (fds[0].revents & POLLIN) {
      alignas(inotify_event) char buffer[4096];
      ssize_t n;
      while ((n = read(inotify_fd_, buffer, sizeof(buffer))) > 0) {
        for (ssize_t at = 0; at < n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
          if (event->len > 0 && name_ == event->name) changed = true;
          at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
      }
    }
  }
}

}  // namespace example_cli
