// cache_client: calls cache.v1.CacheService from the command line.
//
//   cache_client --target=HOST:PORT [--deadline=D]
//                [--policy=FILE [--strict_policies] | --service_config=FILE] COMMAND
//
//   get KEY [--raw]     print the value (with --raw: its exact bytes, no newline)
//   store KEY VALUE     store VALUE; VALUE "-" reads the value's bytes from stdin
//   dump                print every entry as KEY<TAB>VALUE, C-escaped, in key order
//   load                run a closed-loop load and print counts per status code
//                       and latency percentiles (--calls --concurrency --duration
//                       --keys --value_size --get_fraction --seed); with
//                       --metrics_port, http://127.0.0.1:PORT/metrics serves the
//                       channel's metrics while it runs (docs/metrics.md), and
//                       a line on stderr says so: "cache_client: metrics on
//                       http://127.0.0.1:PORT/metrics"
//
// A KEY is any non-empty bytes (e.g. $'\xff' in bash); keys are only ever
// printed C-escaped (by dump, and in the server's error messages).
//
// --service_config=FILE, instead of --policy: a plain gRPC channel with that
// service config (gRPC's own load balancing and retries) and none of the
// library's interceptors, for comparison; `load` then prints no counts of
// the library ("client: gRPC's own channel ...") and takes no --metrics_port.
//
// Deadlines: a call's deadline is --deadline from its start when the flag is
// given; without it the client sets none, and the policy file's `timeout` for
// the method (if any) bounds the call. With both, the earlier one ends it, as
// in gRPC. Each warning of the policy file is one line on stderr,
// "cache_client: warning: ..."; with --strict_policies a warning is an error.
// Breaker transitions are one line each on stderr, "cache_client: <time> breaker ...".
// While `load` runs with --policy, SIGHUP or a change of the file reloads the
// channel's policies (docs/operations.md, "Reloading policies"): one line on
// stderr per reload, "cache_client: <time> policies reloaded on channel ..." or why
// the file did not load (nothing changed then).
//
// Exit status: 0 on success; 1 when the call failed (the gRPC status is
// printed on stderr as "NAME: message"); 2 for bad usage (--help, which
// prints the flags, exits 0).

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/load_generator.h"
#include "examples/cache_service/status_text.h"
#include "examples/common/command_line.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/policy_file_watcher.h"
#include "grpc_resilience/recent_events.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
#include "grpc_resilience/metrics_http.h"
#include "grpc_resilience/resilience_registry.h"
#endif

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "Server address, HOST:PORT.");
ABSL_FLAG(absl::Duration, deadline, absl::InfiniteDuration(),
          "Deadline of a get/store/dump call, and of each call of `load`, from its start. "
          "Not given (or inf): the client sets none, and the policy's `timeout` for the "
          "method, if any, bounds the call; with both, the earlier one applies.");
ABSL_FLAG(std::string, policy, "",
          "Per-method policy file (JSON, proto/resilience/v1/policy.proto): the client's "
          "timeouts, retries and circuit breakers.");
ABSL_FLAG(std::string, service_config, "",
          "Instead of --policy: a gRPC service config (JSON) for a plain gRPC channel, without "
          "the library's interceptors (gRPC's own load balancing and retryPolicy, for "
          "comparison). gRPC checks it: an invalid one fails every call.");
ABSL_FLAG(bool, strict_policies, false,
          "Refuse a policy file with warnings (fields accepted but not applied, deprecated "
          "fields): exit 2 naming them.");
ABSL_FLAG(bool, raw, false, "get: write the value's exact bytes, no newline.");
ABSL_FLAG(int64_t, calls, 1000, "load: calls in total (0 = until --duration).");
ABSL_FLAG(int, concurrency, 4, "load: calls in flight at once.");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(), "load: stop after this long.");
ABSL_FLAG(int64_t, keys, 1000, "load: size of the key space.");
ABSL_FLAG(int64_t, value_size, 100, "load: bytes per stored value.");
ABSL_FLAG(double, get_fraction, 0.8, "load: share of calls that are Get.");
ABSL_FLAG(uint64_t, seed, 1, "load: random seed.");
ABSL_FLAG(int, metrics_port, 0,
          "load: serve the channel's metrics for Prometheus on http://127.0.0.1:PORT/metrics "
          "and its status page on /status (/status.json) while the load runs; 0: neither.");
ABSL_FLAG(bool, admin, false,
          "load, with --metrics_port: serve POST /admin/breaker?channel=C&method=M&command=K "
          "(force_open, force_closed, automatic, reset) to loopback peers; without "
          "--admin_token a request must carry the header X-Resilience-Admin (which no web "
          "page's form can send).");
ABSL_FLAG(std::string, admin_token, "",
          "With --admin: admin requests must carry \"Authorization: Bearer TOKEN\".");

namespace {

constexpr int kCallFailed = 1;

constexpr char kUsageMessage[] =
    "Calls cache.v1.CacheService.\n\n"
    "  cache_client --target=HOST:PORT [--deadline=D]\n"
    "               [--policy=FILE [--strict_policies] | --service_config=FILE]\n"
    "               COMMAND\n\n"
    "  get KEY [--raw]     print the value (--raw: its exact bytes, no newline)\n"
    "  store KEY VALUE     store VALUE (\"-\": read the value's bytes from stdin)\n"
    "  dump                print every entry as KEY<TAB>VALUE, C-escaped, in key order\n"
    "  load                closed-loop load; prints counts per status code and latency\n"
    "                      percentiles (--calls --concurrency --duration --keys\n"
    "                      --value_size --get_fraction --seed; --metrics_port=PORT\n"
    "                      serves the channel's metrics on\n"
    "                      http://127.0.0.1:PORT/metrics and its status page on\n"
    "                      /status while it runs; --admin [--admin_token=T] lets\n"
    "                      loopback peers force its breakers)\n\n"
    "--service_config=FILE instead of --policy: a plain gRPC channel with that service\n"
    "config, none of the library's interceptors (no --metrics_port then).\n"
    "Without --deadline the client sets no deadline: the policy's `timeout` bounds the\n"
    "call. Exit status: 0 ok, 1 the call failed (\"NAME: message\" on stderr), 2 bad usage.";

int Usage(const std::string& message) { return example_cli::UsageError(message); }

int CallFailed(const grpc::Status& status) {
  std::fprintf(stderr, "%s\n", cache_service::FormatStatus(status).c_str());
  return kCallFailed;
}

// Sets the call's deadline from --deadline, when it was given; otherwise the
// call has none of its own and the policy's `timeout` (if any) bounds it.
void SetDeadline(grpc::ClientContext& context) {
  const absl::Duration deadline = absl::GetFlag(FLAGS_deadline);
  if (deadline == absl::InfiniteDuration()) return;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
}

int RunGet(cache::v1::CacheService::Stub& stub, const std::string& key) {
  grpc::ClientContext context;
  SetDeadline(context);
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  grpc::Status status = stub.Get(&context, request, &response);
  if (!status.ok()) return CallFailed(status);
  std::fwrite(response.value().data(), 1, response.value().size(), stdout);
  if (!absl::GetFlag(FLAGS_raw)) std::fputc('\n', stdout);
  return 0;
}

int RunStore(cache::v1::CacheService::Stub& stub, const std::string& key,
             const std::string& value_arg) {
  cache::v1::StoreReq request;
  request.set_key(key);
  if (value_arg == "-") {
    std::string value((std::istreambuf_iterator<char>(std::cin)),
                      std::istreambuf_iterator<char>());
    request.set_value(std::move(value));
  } else {
    request.set_value(value_arg);
  }
  grpc::ClientContext context;
  SetDeadline(context);
  cache::v1::StoreResp response;
  grpc::Status status = stub.Store(&context, request, &response);
  if (!status.ok()) return CallFailed(status);
  return 0;
}

int RunDump(cache::v1::CacheService::Stub& stub) {
  grpc::ClientContext context;
  SetDeadline(context);
  std::unique_ptr<grpc::ClientReader<cache::v1::DumpItem>> reader =
      stub.Dump(&context, cache::v1::DumpReq());
  cache::v1::DumpItem item;
  while (reader->Read(&item)) {
    std::printf("%s\t%s\n", absl::CEscape(item.key()).c_str(),
                absl::CEscape(item.value()).c_str());
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return CallFailed(status);
  return 0;
}

// ReloadPolicies()
//
// Reloads `path` into `channel` on SIGHUP and when the file changes, until
// the returned function is called (it stops and joins both threads).
// SIGHUP must be blocked in every thread (main() blocks it before gRPC
// starts its own).
std::function<void()> ReloadPolicies(resilience::ClientResilience& channel,
                                     const std::string& path,
                                     const resilience::PolicySet::LoadOptions& load_options) {
  resilience::PolicyFileWatcher::ReloadOptions reload;
  reload.load = load_options;
  reload.log = [](absl::string_view line) {
    std::fprintf(stderr, "cache_client: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  absl::StatusOr<std::unique_ptr<resilience::PolicyFileWatcher>> started =
      resilience::PolicyFileWatcher::StartReloading(path, reload, &channel);
  if (!started.ok()) {
    std::fprintf(stderr, "cache_client: --policy: not reloaded on change: %s\n",
                 std::string(started.status().message()).c_str());
    return [] {};
  }
  std::shared_ptr<resilience::PolicyFileWatcher> watcher = *std::move(started);
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto signals = std::make_shared<std::thread>([watcher, stop] {
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    int signal_number = 0;
    while (sigwait(&hup, &signal_number) == 0 && !stop->load()) watcher->Reload();
  });
  return [watcher, stop, signals]() mutable {
    stop->store(true);
    pthread_kill(signals->native_handle(), SIGHUP);  // ends its sigwait()
    signals->join();
    watcher.reset();
  };
}

int RunLoad(cache::v1::CacheService::Stub& stub,
            const std::shared_ptr<resilience::ClientResilience>& channel,
            const std::shared_ptr<const resilience::RecentEvents>& recent,
            const std::string& policy_path,
            const resilience::PolicySet::LoadOptions& load_options) {
  cache_service::LoadOptions options;
  options.calls = absl::GetFlag(FLAGS_calls);
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.key_space = absl::GetFlag(FLAGS_keys);
  options.value_size = absl::GetFlag(FLAGS_value_size);
  options.get_fraction = absl::GetFlag(FLAGS_get_fraction);
  options.call_timeout = absl::GetFlag(FLAGS_deadline);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status s = cache_service::ValidateLoadOptions(options); !s.ok()) {
    return Usage(absl::StrCat("load: ", s.message()));
  }
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
  // The channel's metrics, status page and breaker commands, served by the
  // library's registry while the load runs.
  std::unique_ptr<resilience::MetricsHttpServer> metrics;
  if (const int port = absl::GetFlag(FLAGS_metrics_port); port != 0) {
    // The served callbacks keep the registry's list: it may go out of scope.
    resilience::ResilienceRegistry registry;
    if (absl::Status added = registry.Add(channel); !added.ok()) {
      return Usage(absl::StrCat("--metrics_port: ", added.message()));
    }
    registry.SetEvents(recent);
    resilience::MetricsHttpServer::Options metrics_options;
    metrics_options.port = port;
    metrics_options.admin.enabled = absl::GetFlag(FLAGS_admin);
    metrics_options.admin.token = absl::GetFlag(FLAGS_admin_token);
    absl::StatusOr<std::unique_ptr<resilience::MetricsHttpServer>> started =
        registry.Serve(metrics_options);
    if (!started.ok()) return Usage(absl::StrCat("--metrics_port: ", started.status().message()));
    metrics = *std::move(started);
    std::fprintf(stderr,
                 "cache_client: metrics on http://127.0.0.1:%d/metrics, status on "
                 "http://127.0.0.1:%d/status%s\n",
                 metrics->port(), metrics->port(),
                 metrics_options.admin.enabled ? ", admin on /admin/breaker" : "");
  }
#else
  (void)recent;
#endif
  std::function<void()> stop_reloading = [] {};
  if (channel != nullptr && !policy_path.empty()) {
    stop_reloading = ReloadPolicies(*channel, policy_path, load_options);
  }
  const bool live = isatty(STDOUT_FILENO);
  cache_service::LoadReport report = cache_service::RunLoad(
      stub, options, [live](const cache_service::LoadProgress& p) {
        if (!live) return;
        std::printf("\r%8.1f s  %10ld calls  %10ld ok", absl::ToDoubleSeconds(p.elapsed),
                    static_cast<long>(p.done), static_cast<long>(p.ok));
        std::fflush(stdout);
      });
  stop_reloading();
  if (live) std::printf("\r\033[K");
  std::fputs(report.Format().c_str(), stdout);
  if (channel == nullptr) {
    std::printf("client: gRPC's own channel (--service_config): its retries are not counted\n");
    return 0;
  }
  // What the library did for these calls: attempts the breaker refused
  // (they never left the process), retries, attempts its per-attempt
  // timeout ended, and retries the retry budget refused.
  int64_t rejected = 0, retries = 0, timeouts = 0, refused = 0;
  for (const char* method : {"/cache.v1.CacheService/Get", "/cache.v1.CacheService/Store"}) {
    const resilience::ClientMethodStats stats = channel->Stats(method);
    rejected += stats.rejected_by_breaker;
    retries += stats.retries;
    timeouts += stats.attempt_timeouts;
    refused += stats.retry_budget_exhausted;
  }
  std::printf("client: %ld attempts rejected locally, %ld retries, %ld attempts timed out, "
              "%ld retries refused by the budget\n",
              static_cast<long>(rejected), static_cast<long>(retries),
              static_cast<long>(timeouts), static_cast<long>(refused));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args =
      example_cli::ParseFlagsOrExit(argc, argv, kUsageMessage, example_cli::Args::kAllowed);
  if (args.empty()) return Usage("missing command: get, store, dump or load");
  if (const int port = absl::GetFlag(FLAGS_metrics_port); port < 0 || port > 65535) {
    return Usage(absl::StrCat("--metrics_port: must be in [0, 65535], got ", port));
  }
#ifndef CACHE_SERVICE_HAS_METRICS_HTTP
  if (absl::GetFlag(FLAGS_metrics_port) != 0) {
    return Usage("--metrics_port: this build has no metrics endpoint (RESILIENCE_METRICS_HTTP was off)");
  }
#endif
  if (absl::GetFlag(FLAGS_deadline) <= absl::ZeroDuration()) {
    return Usage(absl::StrCat("--deadline: must be > 0, got ",
                              absl::FormatDuration(absl::GetFlag(FLAGS_deadline))));
  }

  const std::string service_config_path = absl::GetFlag(FLAGS_service_config);
  std::string service_config;
  if (!service_config_path.empty()) {
    if (!absl::GetFlag(FLAGS_policy).empty()) {
      return Usage("--service_config: not with --policy (one configures gRPC's channel, the "
                   "other the library's)");
    }
    if (absl::GetFlag(FLAGS_strict_policies)) {
      return Usage("--strict_policies: only with --policy, not --service_config (gRPC checks "
                   "a service config itself)");
    }
    if (absl::GetFlag(FLAGS_metrics_port) != 0) {
      return Usage("--service_config: not with --metrics_port (a plain gRPC channel has no "
                   "metrics of the library)");
    }
    std::ifstream file(service_config_path);
    if (!file) {
      return Usage(absl::StrCat("--service_config: cannot open \"", service_config_path, "\""));
    }
    service_config.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    if (absl::StripAsciiWhitespace(service_config).empty()) {
      return Usage(absl::StrCat("--service_config: \"", service_config_path, "\" is empty"));
    }
  }
  resilience::PolicySet policies;
  if (const std::string path = absl::GetFlag(FLAGS_policy); !path.empty()) {
    resilience::PolicySet::LoadOptions load_options;
    load_options.strict = absl::GetFlag(FLAGS_strict_policies);
    absl::StatusOr<resilience::PolicySet> loaded =
        resilience::PolicySet::FromJsonFile(path, load_options);
    if (!loaded.ok()) return Usage(std::string(loaded.status().message()));
    policies = *std::move(loaded);
    for (const std::string& warning : policies.warnings()) {
      std::fprintf(stderr, "cache_client: warning: %s\n", warning.c_str());
    }
  }

  const std::string& command = args[0];
  const size_t want = command == "get" ? 2 : command == "store" ? 3 : 1;
  if (command != "get" && command != "store" && command != "dump" && command != "load") {
    return Usage(absl::StrCat("unknown command \"", command,
                              "\"; expected get, store, dump or load"));
  }
  if (args.size() != want) {
    return Usage(absl::StrCat(command, ": expected ", want - 1, " argument(s), got ",
                              args.size() - 1));
  }
  if (command != "load" && absl::GetFlag(FLAGS_metrics_port) != 0) {
    return Usage(absl::StrCat("--metrics_port: only for load, not ", command));
  }
  if (absl::GetFlag(FLAGS_admin) && absl::GetFlag(FLAGS_metrics_port) == 0) {
    return Usage("--admin: needs --metrics_port (the admin endpoint is served beside /metrics)");
  }
  if (!absl::GetFlag(FLAGS_admin_token).empty() && !absl::GetFlag(FLAGS_admin)) {
    return Usage("--admin_token: only with --admin");
  }

  // SIGHUP reloads the policy file while `load` runs: blocked before gRPC
  // starts its threads, so that only the reloading thread takes it.
  if (command == "load" && !absl::GetFlag(FLAGS_policy).empty()) {
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, nullptr);
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(-1);  // values are bounded by the server
  if (!service_config.empty()) {
    // gRPC alone: its own channel, load balancing and retries.
    channel_args.SetServiceConfigJSON(service_config);
    auto stub = cache::v1::CacheService::NewStub(grpc::CreateCustomChannel(
        absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), channel_args));
    if (command == "get") return RunGet(*stub, args[1]);
    if (command == "store") return RunStore(*stub, args[1], args[2]);
    if (command == "dump") return RunDump(*stub);
    return RunLoad(*stub, nullptr, nullptr, "", {});
  }
  // The client chain (retry -> timeout -> breaker) for --policy; with no
  // policy file every call passes through untouched.
  resilience::ResilientChannelOptions channel_options;
  channel_options.args = channel_args;
  // Breaker transitions and operators' commands, one line each on stderr,
  // and the last 50 for the status page.
  auto recent = std::make_shared<resilience::RecentEvents>(
      50, std::make_shared<resilience::LogEvents>(stderr, "cache_client: "));
  channel_options.resilience.events = recent;
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), policies,
      std::move(channel_options));
  for (const std::string& warning : channel.warnings) {
    std::fprintf(stderr, "cache_client: warning: %s\n", warning.c_str());
  }
  auto stub = cache::v1::CacheService::NewStub(channel.channel);
  if (command == "get") return RunGet(*stub, args[1]);
  if (command == "store") return RunStore(*stub, args[1], args[2]);
  if (command == "dump") return RunDump(*stub);
  resilience::PolicySet::LoadOptions load_options;
  load_options.strict = absl::GetFlag(FLAGS_strict_policies);
  return RunLoad(*stub, channel.resilience, recent, absl::GetFlag(FLAGS_policy), load_options);
}
