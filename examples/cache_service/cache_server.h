// File: examples/cache_service/cache_server.h
//
// A running cache service: the store, the service and a gRPC server listening
// on one address. `cache_server`, `cache_demo` and the tests all start the
// service through this class, so they run the same code.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVER_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "examples/cache_service/cache_service_impl.h"
#include "examples/cache_service/cache_store.h"
#include "examples/cache_service/received_attempts.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server_interceptors.h"
#include "grpc_resilience/server_resilience.h"
#include "grpcpp/server.h"

namespace cache_service {

// CacheServer
//
// Example:
//   CacheServer::Options options;            // 127.0.0.1, any free port
//   absl::StatusOr<std::unique_ptr<CacheServer>> server = CacheServer::Start(options);
//   if (!server.ok()) ...;                   // names the address it could not bind
//   std::string target = (*server)->address();   // "127.0.0.1:41234"
//
// Shutdown() and Wait() may be called from different threads. This class is
// thread-safe.
class CacheServer {
 public:
  struct Options {
    // Address to listen on. Defaults to 127.0.0.1 (loopback only).
    std::string host = "127.0.0.1";
    // Start() refuses a `host` that is not a loopback address unless this is
    // set: gRPC 1.51 on its own cannot withstand HTTP/2 rapid-reset and
    // CONTINUATION floods (docs/server-hardening.md), so a server reachable
    // from other hosts belongs behind a proxy that can (the nginx setup
    // there), listening on loopback. Defaults to false.
    bool allow_public_listen_unproxied = false;
    // Port to listen on; 0 picks any free port. Defaults to 0.
    int port = 0;
    CacheStore::Options store;
    // What one server takes on at most (docs/server-hardening.md): threads
    // of the sync server (calls beyond them are answered RESOURCE_EXHAUSTED
    // at once), streams open at once on one connection, and the size of a
    // call's metadata. Default to 256, 100 and 16 KiB.
    int max_threads = 256;
    int max_concurrent_streams = 100;
    int max_metadata_bytes = 16 << 10;
    // Per-method server policies (throttle, fault injection). Defaults to
    // none.
    resilience::PolicySet policies;
    // Told when a throttle starts or stops rejecting. Defaults to none.
    std::shared_ptr<resilience::ResilienceEvents> events;
    // Interceptors of the application's own, between grpc-resilience's and
    // the handler (ServerResilienceOptions::inner_interceptors: the throttle
    // decides first). Called once by Start(), before the server's
    // resilience() exists. Defaults to none.
    std::function<resilience::ServerInterceptorFactoryList()> extra_interceptors;
    // Counts the calls each method receives, and the retries among them,
    // before any interceptor of the library sees them (ReceivedAttempts;
    // an outer interceptor: ServerResilienceOptions::outer_interceptors, so
    // a throttle's rejection is then decided at the call's first hook rather
    // than on arrival: docs/server-rejection.md). Defaults to none.
    std::shared_ptr<ReceivedAttempts> received_attempts;
    // How long Shutdown() keeps serving after reporting NOT_SERVING
    // (ServerResilienceOptions::not_serving_grace, whose default it takes).
    absl::Duration not_serving_grace = resilience::ServerResilienceOptions().not_serving_grace;
  };

  // Start()
  //
  // Validates `options`, binds and starts serving. InvalidArgument for bad
  // options, FailedPrecondition for a host that is not a loopback address
  // without allow_public_listen_unproxied (the message names the risk and
  // the proxy setup), Unavailable when the address cannot be bound, including a port
  // another process (or server) already listens on: SO_REUSEPORT is off, so
  // a second server never silently shares the first one's traffic.
  static absl::StatusOr<std::unique_ptr<CacheServer>> Start(const Options& options);

  ~CacheServer();

  // The port actually bound (never 0) and "host:port" for clients
  // ("[::1]:port" for an IPv6 host).
  int port() const { return port_; }
  const std::string& address() const { return address_; }

  CacheStore& store() { return store_; }
  // The server interceptors' state: counters per method, metrics, the policy
  // file's warnings for a server, live policy updates.
  resilience::ServerResilience& resilience() { return *resilience_; }
  // The same, shared (e.g. for a resilience::ResilienceRegistry).
  const std::shared_ptr<resilience::ServerResilience>& shared_resilience() const {
    return resilience_;
  }

  // Shutdown()
  //
  // Refuses new calls UNAVAILABLE (with pushback, so retrying clients wait)
  // and waits up to `grace` for the calls in flight, streams included;
  // calls still running then are cancelled. When a stream was among them,
  // its client may still be reading: connections stay open until the end of
  // the grace period. Then closes the connections, at once or within a
  // quarter of a second (ServerResilience::DrainAndShutdown()).
  // Returns when all calls are done and every connection is closed.
  void Shutdown(absl::Duration grace);

  // Wait()
  //
  // Blocks until Shutdown() has completed.
  void Wait();

 private:
  CacheServer(const Options& options);

  CacheStore store_;
  CacheServiceImpl service_;
  std::shared_ptr<resilience::ServerResilience> resilience_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
};

// JoinHostPort()
//
// "host:port", bracketing an IPv6 literal host.
std::string JoinHostPort(const std::string& host, int port);

// IsLoopbackHost()
//
// Whether every address `host` stands for is a loopback address: an IPv4
// address in 127.0.0.0/8, ::1 (bracketed or not), an IPv4-mapped loopback
// address, or a name (such as "localhost") that resolves to loopback
// addresses only. False for "0.0.0.0", "::" and names that do not resolve.
bool IsLoopbackHost(const std::string& host);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_SERVER_H_
