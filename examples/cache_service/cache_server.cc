#include "examples/cache_service/cache_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/grpc.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server_builder.h"
#include "grpc_resilience/redis_limits.h"

namespace cache_service {
namespace {

// Whether another socket listens on host:port, found by binding a socket of
// our own the way gRPC does (SO_REUSEADDR, no SO_REUSEPORT). Checked before
// gRPC binds so that the answer is one clear line instead of gRPC's log; gRPC
// refusing the bind stays the final word (the port may be taken in between).
bool PortInUse(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string bare_host(absl::StripSuffix(absl::StripPrefix(host, "["), "]"));
  if (getaddrinfo(bare_host.c_str(), std::to_string(port).c_str(), &hints, &addresses) != 0) {
    return false;  // gRPC reports an unusable host itself
  }
  bool in_use = false;
  for (addrinfo* a = addresses; a != nullptr && !in_use; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    in_use = bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(addresses);
  return in_use;
}

// Whether `address` is a loopback address (IPv4 127.0.0.0/8, ::1, or an
// IPv4-mapped 127.0.0.0/8).
bool IsLoopbackAddress(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const in_addr ip = reinterpret_cast<const sockaddr_in*>(address)->sin_addr;
    return (ntohl(ip.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& ip = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&ip)) return true;
    return IN6_IS_ADDR_V4MAPPED(&ip) && ip.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  const std::string bare_host(absl::StripSuffix(absl::StripPrefix(host, "["), "]"));
  if (bare_host.empty()) return false;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  if (getaddrinfo(bare_host.c_str(), nullptr, &hints, &addresses) != 0) return false;
  bool loopback = addresses != nullptr;
  for (addrinfo* a = addresses; a != nullptr && loopback; a = a->ai_next) {
    loopback = IsLoopbackAddress(a->ai_addr);
  }
  freeaddrinfo(addresses);
  return loopback;
}

std::string JoinHostPort(const std::string& host, int port) {
  if (absl::StrContains(host, ':') && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

CacheServer::CacheServer(const Options& options)
    : store_(options.store), service_(&store_) {}

CacheServer::~CacheServer() {
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now()));
    server_->Wait();
  }
}

absl::StatusOr<std::unique_ptr<CacheServer>> CacheServer::Start(const Options& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("port: must be in [0, 65535], got ", options.port));
  }
  if (options.host.empty()) {
    return absl::InvalidArgumentError("host: must not be empty");
  }
  if (absl::Status s = CacheStore::Validate(options.store); !s.ok()) return s;
  for (const auto& [name, value, min] :
       {std::tuple<const char*, int, int>{"max_threads", options.max_threads, 2},
        {"max_concurrent_streams", options.max_concurrent_streams, 1},
        {"max_metadata_bytes", options.max_metadata_bytes, 1024}}) {
    if (value < min) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": must be >= ", min, ", got ", value));
    }
  }

  if (!options.allow_public_listen_unproxied && !IsLoopbackHost(options.host)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "host \"", options.host,
        "\" is not a loopback address, and gRPC 1.51 on its own cannot withstand HTTP/2 "
        "floods from other hosts (rapid reset, CVE-2023-44487: gigabytes of memory and calls "
        "starved; CONTINUATION: memory grows with what is sent). Listen on 127.0.0.1 behind "
        "the nginx proxy of docs/server-hardening.md (\"Behind a proxy\"), or, to take that "
        "risk, allow_public_listen_unproxied (cache_server: --allow_public_listen_unproxied)"));
  }
  if (options.port != 0 && PortInUse(options.host, options.port)) {
    return absl::UnavailableError(absl::StrCat("port ", options.port, " on ", options.host,
                                               " is in use by another process"));
  }

  std::unique_ptr<CacheServer> server(new CacheServer(options));
  grpc::ServerBuilder builder;
  const std::string requested = JoinHostPort(options.host, options.port);
  builder.AddListeningPort(requested, grpc::InsecureServerCredentials(), &server->port_);
  // gRPC turns SO_REUSEPORT on by default: a second server on a port in use
  // would start and share the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Protocol limits: what they mitigate is in docs/server-hardening.md.
  grpc::ResourceQuota quota("cache_server");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, options.max_metadata_bytes);
  // Dead peers are found (a ping every 2 minutes, 20 s to answer) and
  // clients that ping more often than every 10 s without data are dropped.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 120000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 600000);
  // The standard health service (grpc.health.v1.Health): SERVING once
  // started, NOT_SERVING from the first moment of a shutdown, so that
  // clients that check health leave this replica before its grace period
  // ends (docs/replicas.md). Every method's calls are counted; throttle.global
  // leases its tokens from Redis.
  resilience::ServerResilienceOptions resilience_options;
  resilience_options.events = options.events;
  resilience_options.fleet_limits = resilience::RedisFleetLimits();
  resilience_options.not_serving_grace = options.not_serving_grace;
  // Nearer the handler than ours, so the throttle decides first. Without
  // them, a call the throttle rejects gets no interceptor at all
  // (docs/server-rejection.md, "Deciding on arrival").
  if (options.extra_interceptors) {
    resilience_options.inner_interceptors = options.extra_interceptors();
  }
  if (options.received_attempts != nullptr) {
    resilience_options.outer_interceptors.push_back(options.received_attempts->Factory());
  }
  server->resilience_ = resilience::AddServerInterceptors(builder, options.policies,
                                                         std::move(resilience_options));
  // Behind the guard, a call the interceptors reject never reaches the store.
  if (absl::Status s = server->resilience_->RegisterGuardedService<cache::v1::CacheService>(
          builder, &server->service_);
      !s.ok()) {
    return s;
  }
  // Values may be up to max_value_bytes; leave room for the key and framing.
  const size_t max_message = options.store.max_value_bytes + (size_t{64} << 10);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<size_t>(max_message, size_t{INT32_MAX})));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", requested, " (in use, or not an address of this host)"));
  }
  server->address_ = JoinHostPort(options.host, server->port_);
  server->resilience_->SetServing(*server->server_, true);
  return server;
}

void CacheServer::Shutdown(absl::Duration grace) {
  // NOT_SERVING first; the calls clients picked this server for before
  // they heard it are still served for not_serving_grace (at most half the
  // grace period). Then new calls are refused UNAVAILABLE while the calls admitted before finish
  // (streams included, whose clients keep their connection until the end of
  // the grace period to read what they were sent); held calls end with the
  // grace period. Then GOAWAY, once no call is left: gRPC 1.51 closes a
  // connection as soon as its last call's status is written after a
  // GOAWAY, and the client's window updates then reset it, discarding what
  // the client had not read yet.
  resilience_->DrainAndShutdown(*server_, absl::Now() + grace);
}

void CacheServer::Wait() { server_->Wait(); }

}  // namespace cache_service
