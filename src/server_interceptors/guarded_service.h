// File: src/server_interceptors/guarded_service.h
//
// Makes a rejection by grpc-resilience's server interceptors final: the
// user's handler never runs for a rejected call, and the client receives the
// rejection status with no response message (what gRPC's own retry and other
// standard clients need to treat the call as not processed).

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARDED_SERVICE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARDED_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/impl/service_type.h"
#include "src/server_interceptors/call_verdicts.h"

namespace resilience {

// GuardedService
//
// A grpc::Service that serves the methods of the user's service: same names,
// same call types, same server API (sync or callback), calling the user's
// own gRPC handlers. Before a handler runs, it takes the call's verdict from
// CallVerdicts:
//   - rejected: the call is answered at once without the user's code (sync
//     API: initial metadata and status; callback API: the stock handler's
//     failure path), and the rejecting interceptor puts its own status and
//     pushback on that answer at PRE_SEND_STATUS;
//   - rejected on arrival (callback API, CallVerdicts::RejectOnArrival(): no
//     interceptor of ours exists for the call): answered with the verdict's
//     own status and pushback by a handler of the guard's for the call type,
//     which also took the request (as bytes, unparsed) in Deserialize(); a
//     unary call's reactor is the context's DefaultReactor, which gRPC
//     finishes inline;
//   - held (an injected delay, sync API only): the handler's thread waits
//     until the hold is over, then runs the user's handler; if the call ends
//     first (deadline, client cancellation, server shutdown after its grace
//     period), the handler is skipped and the call answered
//     DEADLINE_EXCEEDED. The wait costs what a slow handler costs, on the
//     thread gRPC gave the call, and never a thread of ours. The callback
//     API has no such hold: gRPC 1.51 starts a call's only close operation
//     (what reports a cancellation) inside the user's handler object, right
//     before it makes the user's reactor, so a guard's hold there could not
//     see a cancellation either (docs/server-rejection.md, fact 9).
//
// Register the GuardedService with the ServerBuilder *instead of* the user's
// service (which must outlive the server, as a registered service must). The
// usual way is GuardRegistry::Register().
//
// What it relies on in gRPC 1.51 (docs/server-rejection.md, pinned by
// tests/server_interceptors/guarded_service_test.cc): the codegen interface
// every generated service uses (RpcServiceMethod, MethodHandler), the
// protected grpc::Service::GetHandler(), and that a callback handler given a
// non-OK request status fails the call without creating the user's reactor.
//
// Supported: protobuf services whose methods are all sync or all callback
// (the generated Service / CallbackService and their WithCallbackMethod_
// forms), all four call types. Refused with InvalidArgument: async or raw
// methods (the completion-queue API has no handler to guard; register such a
// service directly, and the interceptor still rewrites the status of a
// rejected call), generic methods, services that mix the sync and callback
// APIs, streamed-unary and split-streaming methods.
class GuardedService final : public grpc::Service {
 public:
  // Create()
  //
  // Guards `service`, an implementation of the protobuf service
  // `full_name` ("cache.v1.CacheService"). `service` and `verdicts` must
  // outlive the guard.
  static absl::StatusOr<std::unique_ptr<GuardedService>> Create(grpc::Service* service,
                                                                absl::string_view full_name,
                                                                CallVerdicts* verdicts);

  // The methods guarded, "/pkg.Service/Method".
  const std::vector<std::string>& methods() const { return method_names_; }

 private:
  GuardedService() = default;

  // RpcServiceMethod keeps a pointer to its name: the names live here.
  std::vector<std::string> method_names_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_GUARDED_SERVICE_H_
