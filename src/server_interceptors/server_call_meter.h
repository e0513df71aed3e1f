// File: src/server_interceptors/server_call_meter.h
//
// The counting of one server call (admitted, in flight, status, handler
// latency) over its method's state.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_METER_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_METER_H_

#include "absl/time/time.h"
#include "src/server_interceptors/server_method_state.h"

namespace resilience {

// ServerCallMeter
//
// The metrics stage of a server call (ServerCall, last of its stages): the
// call's counters, kept by this meter alone. Admitted: by the throttle
// when the method has one, else unless fault injection aborts it. Not
// thread-safe: used from the call's own hooks and its destructor, which
// gRPC serializes.
class ServerCallMeter {
 public:
  ServerCallMeter() = default;

  // Admit()
  //
  // The call goes on to its handler: admitted, in flight until
  // StatusSent() or Abandon(); its handler latency starts now. Once.
  void Admit(ServerMethodState& state) {
    if (admitted_) return;
    admitted_ = true;
    in_flight_ = true;
    state.admitted.fetch_add(1, std::memory_order_relaxed);
    state.in_flight.fetch_add(1, std::memory_order_relaxed);
    if (state.metrics) start_ = state.clock->Now();
  }

  // StatusSent()
  //
  // The status `code` is being sent (PRE_SEND_STATUS, after the other
  // stages rewrote it): counted, and for an admitted call its
  // handler latency, unless `handler_skipped` (answered without its
  // handler). Once.
  void StatusSent(ServerMethodState& state, int code, bool handler_skipped) {
    if (status_sent_) return;
    status_sent_ = true;
    if (state.metrics) state.meter.CountStatus(code);
    if (!admitted_) return;
    Abandon(state);
    if (state.metrics && !handler_skipped) {
      state.meter.ObserveLatency(state.clock->Now() - start_);
    }
  }

  // Abandon()
  //
  // The call is no longer in flight (also: it closed without a status,
  // cancelled or past its deadline).
  void Abandon(ServerMethodState& state) {
    if (!in_flight_) return;
    in_flight_ = false;
    state.in_flight.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  absl::Time start_;  // on the server's clock (monotonic)
  bool admitted_ = false;
  bool in_flight_ = false;
  bool status_sent_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_METER_H_
