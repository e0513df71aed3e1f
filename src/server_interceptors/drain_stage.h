// File: src/server_interceptors/drain_stage.h
//
// The drain stage of a server call (ServerCall), the first step of a
// graceful shutdown: calls that arrive once the server drains
// (ServerDrainer::Drain()) are refused UNAVAILABLE, which clients
// retry, while the calls that arrived before finish.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_STAGE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_STAGE_H_

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/server_drainer.h"

namespace resilience {

// DrainStage
//
// One per call, made when the call arrives, the first of ServerCall's
// stages (a refused call goes to no other):
//   - before the server drains: counts the call as open (Open(),
//     ServerDrainer::open_calls()) until the stage is destroyed,
//     which gRPC does once the handler has returned and the call has
//     closed (its status written), so Drain() knows when the calls it must
//     let finish are done, and whether a stream was among them;
//   - once it drains: the call is refused: added to CallVerdicts (a
//     GuardedService skips its handler), and at PRE_SEND_STATUS its status
//     becomes UNAVAILABLE "<method>: server shutting down" with a
//     `grpc-retry-pushback-ms` of kDrainPushback, so that retrying clients
//     are not sending when the server's GOAWAY goes out (gRPC 1.51 cancels
//     a call that reaches a server after its Shutdown(): the client sees
//     CANCELLED, which no client retries); in the drain's last kParkWindow
//     the refused call waits (no Proceed()) until
//     ServerDrainer::ReleaseRefusedCalls(), after the GOAWAY, so that a
//     client that calls again at once is not calling when it goes out.
// Not thread-safe: gRPC serializes a call's hooks.
class DrainStage {
 public:
  DrainStage(grpc::experimental::ServerRpcInfo* info, ServerDrainer& drainer,
             CallVerdicts& verdicts)
      : info_(info), drainer_(drainer), verdicts_(verdicts), refuse_(drainer.draining()) {}
  DrainStage(const DrainStage&) = delete;
  DrainStage& operator=(const DrainStage&) = delete;
  ~DrainStage();

  // Whether the call arrived while the server drains.
  bool refuses() const { return refuse_; }

  // Open()
  //
  // A call not refused is open until the stage is destroyed (not called
  // for a call the throttle rejected on arrival: it runs no user code).
  void Open();

  // Arrive()
  //
  // POST_RECV_INITIAL_METADATA of a refused call: its handler is not to
  // run. Returns true when the call is kept until ReleaseRefusedCalls()
  // (then Proceed() comes from there).
  bool Arrive(grpc::experimental::InterceptorBatchMethods* methods);

  // SendStatus()
  //
  // PRE_SEND_STATUS of a refused call: UNAVAILABLE with the pushback.
  void SendStatus(grpc::experimental::InterceptorBatchMethods* methods);

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  ServerDrainer& drainer_;
  CallVerdicts& verdicts_;
  const bool refuse_;  // arrived while draining
  bool open_ = false;  // counted in open_calls()
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_STAGE_H_
