// The servers bench/server_rejection_cost_bench.cc measures, on the sync or
// the callback API, and the client call it makes to them. A benchmark's
// fixtures, not a library piece.
//
// Modes (the same on both APIs; the sync API's handlers are the callback
// ones written for grpc::Service):
//
//   served            the cache's Get, no interceptors
//   served_passthrough  the same with one server interceptor that only calls
//                     Proceed(): what gRPC charges any interceptor
//   served_throttle   AddServerInterceptors + RegisterGuardedService, as
//                     users wire it, a throttle that never binds
//                     (maxConcurrency 1000); its callers do not ask for the
//                     load report (any client but a routed one), so none is sent
//   served_throttle_asked  the same, every call asking for the report
//                     (resilience-orca), as a routed client's attempts do
//   served_throttle_no_report  served_throttle with "loadReport": false
//   served_throttle_shadow  served_throttle in shadow mode
//   shadow_would_reject  the rejecting throttle in shadow: served
//   rejected          the same wiring, every call rejected by the throttle
//                     (ratePerSecond 0.001: the warm-up takes the one token)
//   floor             no interceptors; a handler that answers at once the
//                     status and trailers the rejection sends
//   floor_passthrough the floor's handler behind one pass-through interceptor
//   served_passthrough_report  served_passthrough whose interceptor adds to
//                     every answer the trailers a served_throttle_asked call
//                     got (the load report): what gRPC charges for carrying it

#ifndef GRPC_RESILIENCE_BENCH_SERVER_COST_SERVERS_H_
#define GRPC_RESILIENCE_BENCH_SERVER_COST_SERVERS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/cache_store.h"
#include "grpc_resilience/server.h"
#include "grpcpp/server.h"

namespace resilience::bench {

// The status and trailers a client saw.
struct Answer {
  grpc::Status status;
  std::vector<std::pair<std::string, std::string>> trailers;
};

// One Get of the key every server holds, with a 60 s deadline.
// `ask`: the call asks for the load report (resilience-orca), as a routed
// attempt of the library's client does.
Answer GetOnce(cache::v1::CacheService::Stub& stub, bool ask = false);

// A stub on a channel of its own to localhost:`port`.
std::unique_ptr<cache::v1::CacheService::Stub> StubTo(int port);

// Whether `mode` is one of the modes above; `api` "sync" or "callback".
bool KnownServerMode(const std::string& mode);
bool KnownServerApi(const std::string& api);

// A server of `mode` on the `api` on a free port (`port`); the floor's
// handler answers `answer`, served_passthrough_report adds its trailers.
// Null if it cannot be built.
struct CostServer {
  std::unique_ptr<cache_service::CacheStore> store;
  std::unique_ptr<grpc::Service> service;
  std::shared_ptr<ServerResilience> resilience;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
std::unique_ptr<CostServer> ServeCostServer(const std::string& api, const std::string& mode,
                                            const Answer& answer);

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_SERVER_COST_SERVERS_H_
