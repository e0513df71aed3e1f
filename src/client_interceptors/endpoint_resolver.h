// File: src/client_interceptors/endpoint_resolver.h
//
// The addresses of a channel's target, for the library's endpoint picker:
// gRPC 1.51 has no public resolver API (shared design notes,
// routing-1.51.md), so the library reads `ipv4:`/`ipv6:` lists itself and
// resolves `dns:` names (and bare host:port targets, which gRPC resolves
// by DNS too) with getaddrinfo on a thread of its own.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_RESOLVER_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_RESOLVER_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// EndpointResolver
//
// Parse() tells what a target is; a resolver made for a `dns:` target
// resolves it at once, then every `interval`, and soon after Refresh()
// (a connection failed: the replicas may have moved), at most once every
// 5 s. Each result that differs from the last goes to `on_change`, on
// the resolver's thread; a failed resolution keeps the last result (and is
// reported in last_error()). A static list is given once, at Start().
class EndpointResolver {
 public:
  // What a target names.
  struct Target {
    // Endpoints as gRPC names peers ("ipv4:10.0.0.1:443", "ipv6:[::1]:443"),
    // for a static list; empty for a name to resolve.
    std::vector<std::string> fixed;
    // For a name: its host and port (443 when the target gives none).
    std::string host;
    std::string port;
    // The authority gRPC would give the target's calls ("host:port"),
    // which every endpoint's channel keeps (TLS host checks); empty for a
    // static list (gRPC's own default then applies).
    std::string authority;
  };

  // Parse()
  //
  // `ipv4:a:p,b:p`, `ipv6:[a]:p,...`, `dns:[//authority/]host[:port]` and a
  // bare `host[:port]`; Unimplemented for every other scheme (unix:, xds:,
  // ...: gRPC's own policy keeps those), InvalidArgument naming the target
  // for a malformed one.
  static absl::StatusOr<Target> Parse(absl::string_view target);

  // ListedCount()
  //
  // How many distinct endpoints `target` lists (an ipv4: or ipv6: list); 0
  // for a name to resolve and for a target Parse() refuses.
  static int ListedCount(absl::string_view target);

  // Resolve()
  //
  // The endpoints of `host`:`port` now (getaddrinfo, blocking), in the
  // order it gives them, duplicates removed; an error naming the host.
  static absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host,
                                                          const std::string& port);

  using Listener = std::function<void(const std::vector<std::string>& endpoints)>;

  // `clock` (monotonic time) must outlive the resolver.
  EndpointResolver(Target target, absl::Duration interval, Listener on_change,
                   Clock& clock = Clock::Real());
  ~EndpointResolver();  // stops the thread

  EndpointResolver(const EndpointResolver&) = delete;
  EndpointResolver& operator=(const EndpointResolver&) = delete;

  // Start(): the static list now, or the thread's first resolution.
  void Start();
  // Refresh(): resolve again soon (no effect for a static list).
  void Refresh() ABSL_LOCKS_EXCLUDED(mu_);
  // The last resolution's error; OK when it succeeded.
  absl::Status last_error() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const Target target_;
  const absl::Duration interval_;
  const Listener on_change_;
  Clock& clock_;
  Mutex mu_;
  CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool refresh_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> last_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_RESOLVER_H_
