// File: experiments/goodput/schedule_fault_interceptor.h
//
// A server interceptor that fails calls as the goodput experiment's schedule
// says (see ScheduledFaults), so that real clients with real breakers meet
// the same backend as the simulated mode.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULE_FAULT_INTERCEPTOR_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULE_FAULT_INTERCEPTOR_H_

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "examples/cache_service/cache_server.h"
#include "experiments/goodput/scheduled_faults.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/call_verdicts.h"

namespace goodput {

// Where the interceptors find the server's call verdicts: a CacheServer makes
// its interceptor factories before its state, so StartScheduledServer() fills
// this in once the server has started (before any call of the run).
struct CallVerdictsSlot {
  std::atomic<resilience::CallVerdicts*> verdicts{nullptr};
};

// ScheduleFaultInterceptor
//
// At POST_RECV_INITIAL_METADATA, a call that carries kRunMetadataKey and
// kTickMetadataKey gets its fate from ScheduledFaults; a failing call is
// added to the server's CallVerdicts (so the guarded service never runs its
// handler) and its status replaced at PRE_SEND_STATUS ("<method>: scheduled <state> at tick
// N"). A malformed tick gets INVALID_ARGUMENT. Calls without the metadata,
// or already rejected by grpc-resilience's throttle, pass untouched. One
// instance per call.
class ScheduleFaultInterceptor final : public grpc::experimental::Interceptor {
 public:
  // Without `call_verdicts` (a call before the slot was filled), a failing
  // call's status is replaced but its handler runs.
  ScheduleFaultInterceptor(grpc::experimental::ServerRpcInfo* info, ScheduledFaults& faults,
                           resilience::CallVerdicts* call_verdicts)
      : info_(info), faults_(faults), call_verdicts_(call_verdicts) {}
  ~ScheduleFaultInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  void Decide(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  ScheduledFaults& faults_;
  resilience::CallVerdicts* const call_verdicts_;
  bool replace_status_ = false;
  grpc::Status status_;
};

class ScheduleFaultInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `faults` and the slot's verdicts must outlive the server.
  ScheduleFaultInterceptorFactory(ScheduledFaults& faults,
                                  std::shared_ptr<const CallVerdictsSlot> slot)
      : faults_(faults), slot_(std::move(slot)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ScheduleFaultInterceptor(info, faults_, slot_->verdicts.load());
  }

 private:
  ScheduledFaults& faults_;
  const std::shared_ptr<const CallVerdictsSlot> slot_;
};

// StartScheduledServer()
//
// A CacheServer started with `options` whose calls carrying a run's metadata
// fail as `faults` says (a ScheduleFaultInterceptorFactory after
// grpc-resilience's own interceptors), holding `key`: the value every Get of
// the run returns. `faults` must outlive the server.
absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> StartScheduledServer(
    ScheduledFaults& faults, cache_service::CacheServer::Options options, absl::string_view key);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULE_FAULT_INTERCEPTOR_H_
