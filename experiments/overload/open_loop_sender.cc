#include "experiments/overload/open_loop_sender.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "examples/cache_service/bounded_capacity_service.h"
#include "grpc_resilience/policy.h"

namespace overload {

// One call in flight; deleted when answered.
struct OpenLoopSender::Call {
  grpc::ClientContext context;
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  absl::Time sent;
  std::function<void(const grpc::Status&, absl::Duration)> ended;
};

OpenLoopSender::OpenLoopSender(cache::v1::CacheService::Stub& stub, absl::Duration deadline)
    : stub_(stub), deadline_(deadline) {}

OpenLoopSender::~OpenLoopSender() {
  // Every call carries a deadline, so this ends.
  while (outstanding_.load() > 0) absl::SleepFor(absl::Milliseconds(5));
}

void OpenLoopSender::WarmUp(cache::v1::CacheService::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  cache::v1::GetReq request;
  cache::v1::GetResp response;
  request.set_key("warm-up");
  stub.Get(&context, request, &response);
}

bool OpenLoopSender::SendAt(absl::Time at,
                            absl::FunctionRef<void(grpc::ClientContext&)> prepare,
                            std::function<void(Answer)> answered) {
  const absl::Duration deadline = deadline_;
  return SendAt(at, deadline_, prepare,
                [deadline, answered = std::move(answered)](const grpc::Status& status,
                                                           absl::Duration latency) {
                  answered(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED
                               ? Answer::kRejected
                           : status.ok() && latency <= deadline ? Answer::kOkInDeadline
                                                                : Answer::kLate);
                });
}

bool OpenLoopSender::SendAt(absl::Time at, absl::Duration deadline,
                            absl::FunctionRef<void(grpc::ClientContext&)> prepare,
                            std::function<void(const grpc::Status&, absl::Duration)> ended) {
  if (const absl::Duration wait = at - absl::Now(); wait > absl::ZeroDuration()) {
    absl::SleepFor(wait);
  }
  if (absl::Now() - at > deadline_) {
    unsent_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  auto* call = new Call;
  call->request.set_key("k");
  call->ended = std::move(ended);
  prepare(call->context);
  call->sent = absl::Now();
  call->context.set_deadline(absl::ToChronoTime(call->sent + std::min(deadline, deadline_)));
  outstanding_.fetch_add(1);
  stub_.async()->Get(&call->context, &call->request, &call->response,
                     [this, call](grpc::Status status) {
                       call->ended(status, absl::Now() - call->sent);
                       delete call;
                       outstanding_.fetch_sub(1);
                     });
  return true;
}

bool OpenLoopSender::Drain() {
  const absl::Time give_up = absl::Now() + deadline_ + absl::Seconds(5);
  while (outstanding_.load() > 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  return outstanding_.load() == 0;
}

absl::StatusOr<int64_t> SendToGuardedBackend(const Policy& policy, int workers,
                                             absl::Duration service_time,
                                             absl::Duration deadline, uint64_t seed,
                                             absl::FunctionRef<void(OpenLoopSender&)> send) {
  absl::StatusOr<resilience::PolicySet> policies =
      resilience::PolicySet::FromJsonString(PolicyFileJson(policy));
  if (!policies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", policy.name, ": ", policies.status().message()));
  }
  cache_service::BoundedCapacityService service(workers, workers, service_time, seed);
  absl::StatusOr<cache_service::GuardedBackend> backend =
      cache_service::ServeGuarded(service, *std::move(policies));
  if (!backend.ok()) return backend.status();
  OpenLoopSender::WarmUp(*backend->stub);
  // Destroyed first: it waits for every call to end before the server,
  // the service and the stub go.
  OpenLoopSender sender(*backend->stub, deadline);
  send(sender);
  sender.Drain();
  service.Stop();
  backend->server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  return sender.unsent();
}

}  // namespace overload
