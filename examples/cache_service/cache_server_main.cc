// cache_server: serves cache.v1.CacheService.
//
//   cache_server [--host=127.0.0.1] [--port=0] [--max_entries=100000]
//                [--max_value_bytes=1048576] [--max_total_bytes=268435456]
//                [--grace_period=5s] [--not_serving_grace=0.5s]
//                [--policy=FILE [--strict_policies]]
//                [--metrics_port=0] [--allow_public_listen_unproxied]
//
// --host must be a loopback address unless --allow_public_listen_unproxied
// is given: gRPC 1.51 alone cannot withstand HTTP/2 floods, so a server
// others can reach belongs behind the nginx proxy of docs/server-hardening.md.
// First line on stdout (flushed): "listening on HOST:PORT". With
// --metrics_port, http://127.0.0.1:PORT/metrics serves the server's metrics
// (docs/metrics.md) for Prometheus, with the calls each method received and
// the retries among them (ReceivedAttempts), and a line on stderr, after the first
// line on stdout, says so: "cache_server: metrics on
// http://127.0.0.1:PORT/metrics, status on http://127.0.0.1:PORT/status"
// (the status page, docs/operations.md). SIGINT or SIGTERM reports
// NOT_SERVING, serves what still arrives for --not_serving_grace, then
// refuses new calls (UNAVAILABLE, with pushback), lets calls in flight finish
// for up to --grace_period (after a stream, its client keeps the connection
// that long to read it), closes the connections and exits 0
// (CacheServer::Shutdown()). Each warning of the policy file (a field accepted but not
// applied, a deprecated field) is one line on stderr, "cache_server: warning:
// ..."; with --strict_policies a warning is an error. Throttles that start or
// stop rejecting, one line each on stderr. --help prints the flags and exits
// 0. Bad flags, a bad policy file, a port in use (either), a --host that is
// not loopback without --allow_public_listen_unproxied: one line on stderr,
// exit 2.
//
// With --policy, the file is reloaded on SIGHUP and whenever it changes
// (written, or another file renamed over it): the new policies apply to the
// calls that arrive from then on, calls in flight finish under the old ones,
// and what each method keeps of its state is in docs/operations.md,
// "Reloading policies". One line on stderr per reload ("cache_server:
// policies reloaded on server from FILE (generation 2): 1 method changed
// (...)"); a file that fails to load changes nothing and the line says why,
// as at start. Without --policy, SIGHUP is ignored (one line says so).

#include <signal.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "examples/cache_service/cache_server.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/recent_events.h"
#include "examples/common/command_line.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_file_watcher.h"
#include "grpc_resilience/redis_limits.h"
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
#include "grpc_resilience/metrics_http.h"
#include "grpc_resilience/resilience_registry.h"
#endif

ABSL_FLAG(std::string, host, "127.0.0.1",
          "Address to listen on; a loopback address unless --allow_public_listen_unproxied.");
ABSL_FLAG(bool, allow_public_listen_unproxied, false,
          "Listen on a --host other hosts can reach, without a proxy in front: gRPC 1.51 alone "
          "cannot withstand HTTP/2 rapid-reset and CONTINUATION floods (docs/server-hardening.md "
          "has the nginx setup to put in front instead).");
ABSL_FLAG(int, port, 0, "Port to listen on; 0 picks any free port.");
ABSL_FLAG(int64_t, max_entries, 100000, "Entries kept before LRU eviction.");
ABSL_FLAG(int64_t, max_value_bytes, 1 << 20, "Largest value accepted, in bytes.");
ABSL_FLAG(int64_t, max_total_bytes, int64_t{256} << 20,
          "Bytes (keys + values) kept before LRU eviction.");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(5),
          "How long calls in flight may finish after SIGINT/SIGTERM.");
ABSL_FLAG(absl::Duration, not_serving_grace,
          resilience::ServerResilienceOptions().not_serving_grace,
          "After SIGINT/SIGTERM the health service says NOT_SERVING at once; calls that still "
          "arrive are served for this long (at most half the --grace_period), then refused.");
ABSL_FLAG(std::string, policy, "",
          "Per-method policy file (JSON, proto/resilience/v1/policy.proto): the server's "
          "throttles and fault injection.");
ABSL_FLAG(bool, strict_policies, false,
          "Refuse a policy file with warnings (fields accepted but not applied, deprecated "
          "fields): exit 2 naming them.");
ABSL_FLAG(int, metrics_port, 0,
          "Serve the server's metrics for Prometheus on http://127.0.0.1:PORT/metrics and its "
          "status page on /status (/status.json); 0: neither.");

namespace {

constexpr char kUsage[] =
    "Serves cache.v1.CacheService.\n\n"
    "  cache_server [--host=127.0.0.1] [--port=0] [--max_entries=100000]\n"
    "               [--max_value_bytes=1048576] [--max_total_bytes=268435456]\n"
    "               [--grace_period=5s] [--not_serving_grace=0.5s]\n"
    "               [--policy=FILE [--strict_policies]] [--metrics_port=0] [--allow_public_listen_unproxied]\n\n"
    "--host must be a loopback address: gRPC 1.51 alone cannot withstand HTTP/2 floods,\n"
    "so put the nginx proxy of docs/server-hardening.md in front, or take that risk with\n"
    "--allow_public_listen_unproxied.\n"
    "The first line on stdout is \"listening on HOST:PORT\". SIGINT or SIGTERM reports\n"
    "NOT_SERVING, serves for --not_serving_grace, then refuses new calls (UNAVAILABLE)\n"
    "and lets calls in flight finish, for up to --grace_period in all.\n"
    "SIGHUP, or a change of the --policy file, reloads it (a bad file changes nothing).\n"
    "Warnings of the policy file are printed on stderr, one line each. With\n"
    "--metrics_port, http://127.0.0.1:PORT/metrics serves the server's metrics (a line\n"
    "on stderr says where). Exit status: 0 after a signal, 2 for bad flags, a bad policy\n"
    "file, a --host that is not loopback (without the flag above) or a port in use.";

int Fail(const std::string& message) { return example_cli::UsageError(message); }

// Returns an error message, or "" when the flag value is usable as a size.
std::string CheckPositive(const char* name, int64_t value) {
  if (value > 0) return "";
  return absl::StrCat("--", name, ": must be > 0, got ", value);
}

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  for (const std::string& error :
       {CheckPositive("max_entries", absl::GetFlag(FLAGS_max_entries)),
        CheckPositive("max_value_bytes", absl::GetFlag(FLAGS_max_value_bytes)),
        CheckPositive("max_total_bytes", absl::GetFlag(FLAGS_max_total_bytes))}) {
    if (!error.empty()) return Fail(error);
  }
  if (const int port = absl::GetFlag(FLAGS_port); port < 0 || port > 65535) {
    return Fail(absl::StrCat("--port: must be in [0, 65535], got ", port));
  }
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port < 0 || metrics_port > 65535) {
    return Fail(absl::StrCat("--metrics_port: must be in [0, 65535], got ", metrics_port));
  }
#ifndef CACHE_SERVICE_HAS_METRICS_HTTP
  if (metrics_port != 0) {
    return Fail("--metrics_port: this build has no metrics endpoint (RESILIENCE_METRICS_HTTP was off)");
  }
#endif
  if (absl::GetFlag(FLAGS_grace_period) < absl::ZeroDuration()) {
    return Fail(absl::StrCat("--grace_period: must be >= 0, got ",
                             absl::FormatDuration(absl::GetFlag(FLAGS_grace_period))));
  }
  if (absl::GetFlag(FLAGS_not_serving_grace) < absl::ZeroDuration()) {
    return Fail(absl::StrCat("--not_serving_grace: must be >= 0, got ",
                             absl::FormatDuration(absl::GetFlag(FLAGS_not_serving_grace))));
  }
  const std::string policy_path = absl::GetFlag(FLAGS_policy);
  resilience::PolicySet policies;
  resilience::PolicySet::LoadOptions load_options;
  load_options.strict = absl::GetFlag(FLAGS_strict_policies);
  if (!policy_path.empty()) {
    absl::StatusOr<resilience::PolicySet> loaded =
        resilience::PolicySet::FromJsonFile(policy_path, load_options);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    policies = *std::move(loaded);
    // Redis credentials the policies name and Redis refuses: an error now,
    // not a silent local share later (an unreachable Redis is not one).
    if (absl::Status s = resilience::CheckGlobalThrottleCredentials(policies); !s.ok()) {
      return Fail(absl::StrCat("policy file \"", policy_path, "\": ", s.message()));
    }
  }

  cache_service::CacheServer::Options options;
  options.host = absl::GetFlag(FLAGS_host);
  options.allow_public_listen_unproxied = absl::GetFlag(FLAGS_allow_public_listen_unproxied);
  options.port = absl::GetFlag(FLAGS_port);
  options.store.max_entries = static_cast<size_t>(absl::GetFlag(FLAGS_max_entries));
  options.store.max_value_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_value_bytes));
  options.store.max_total_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_total_bytes));
  options.policies = std::move(policies);
  options.not_serving_grace = absl::GetFlag(FLAGS_not_serving_grace);
  // Throttle saturation, one line each on stderr, and the last 50 for the
  // status page.
  auto recent = std::make_shared<resilience::RecentEvents>(
      50, std::make_shared<resilience::LogEvents>(stderr, "cache_server: "));
  options.events = recent;
  // With metrics, /metrics also shows the calls each method received and the
  // retries among them (cache_server_attempts_received_total,
  // cache_server_retries_received_total): where the clients' retries went.
  std::shared_ptr<cache_service::ReceivedAttempts> received;
  if (metrics_port != 0) {
    received = std::make_shared<cache_service::ReceivedAttempts>();
    options.received_attempts = received;
  }

  // Block the stop signals and SIGHUP (reload) before gRPC starts its
  // threads, so that only the signal thread below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  // The policy file's warnings for a server: not those of settings only a
  // client applies (the file may serve both).
  for (const std::string& warning : (*server)->resilience().warnings()) {
    std::fprintf(stderr, "cache_server: warning: %s\n", warning.c_str());
  }

#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
  // The server's metrics and status page, served by the library's
  // registry. Declared after the server, so destroyed (stopped) before it;
  // server_state before the HTTP server, which serves it while it lives
  // (the registry holds it weakly).
  std::shared_ptr<resilience::ServerResilience> server_state;
  std::unique_ptr<resilience::MetricsHttpServer> metrics;
  if (metrics_port != 0) {
    server_state = (*server)->shared_resilience();
    resilience::ResilienceRegistry registry;  // the HTTP server keeps its list
    registry.SetEvents(recent);
    resilience::MetricsHttpServer::Options metrics_options;
    metrics_options.port = metrics_port;
    absl::StatusOr<std::unique_ptr<resilience::MetricsHttpServer>> started =
        absl::InternalError("not started");
    absl::StatusOr<resilience::MetricsHttpServer::Options> served =
        registry.ServeOptions(metrics_options);
    if (absl::Status added = registry.Add(server_state, (*server)->address()); !added.ok()) {
      started = added;
    } else if (!served.ok()) {
      started = served.status();
    } else {
      started = resilience::MetricsHttpServer::Start(
          *std::move(served), [render = registry.Render(), received] {
            return render() + received->Render();
          });
    }
    if (!started.ok()) {
      (*server)->Shutdown(absl::ZeroDuration());
      return Fail(absl::StrCat("--metrics_port: ", started.status().message()));
    }
    metrics = *std::move(started);
  }
#endif

  std::printf("listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
  if (metrics != nullptr) {
    std::fprintf(stderr,
                 "cache_server: metrics on http://127.0.0.1:%d/metrics, status on "
                 "http://127.0.0.1:%d/status\n",
                 metrics->port(), metrics->port());
  }
#endif

  // The policy file, reloaded on change and on SIGHUP; the event listener
  // (LogEvents) prints one line per reload, failed or not.
  std::unique_ptr<resilience::PolicyFileWatcher> watcher;
  if (!policy_path.empty()) {
    resilience::PolicyFileWatcher::ReloadOptions reload;
    reload.load = load_options;
    reload.log = [](absl::string_view line) {
      std::fprintf(stderr, "cache_server: %.*s\n", static_cast<int>(line.size()), line.data());
    };
    absl::StatusOr<std::unique_ptr<resilience::PolicyFileWatcher>> started =
        resilience::PolicyFileWatcher::StartReloading(policy_path, reload,
                                                      &(*server)->resilience());
    if (!started.ok()) {
      std::fprintf(stderr, "cache_server: --policy: not reloaded on change: %s\n",
                   std::string(started.status().message()).c_str());
    } else {
      watcher = *std::move(started);
    }
  }

  const absl::Duration grace = absl::GetFlag(FLAGS_grace_period);
  std::thread signal_thread([&] {
    int signal_number = 0;
    for (;;) {
      sigwait(&stop_signals, &signal_number);
      if (signal_number != SIGHUP) break;
      if (watcher != nullptr) {
        watcher->Reload();
      } else {
        std::fprintf(stderr, "cache_server: SIGHUP: no --policy file to reload\n");
      }
    }
    std::fprintf(stderr, "cache_server: %s received, shutting down (grace period %s)\n",
                 signal_number == SIGINT ? "SIGINT" : "SIGTERM",
                 absl::FormatDuration(grace).c_str());
    (*server)->Shutdown(grace);
  });
  // Returns once every call is done and every connection closed, each after
  // its client read what it was sent (CacheServer::Shutdown()).
  (*server)->Wait();
  signal_thread.join();
  watcher.reset();
  std::fprintf(stderr, "cache_server: stopped\n");
  return 0;
}
