// The public ServerResilience (grpc_resilience/server_resilience.h): a
// facade that forwards to the ServerResilienceImpl of its server.

#include "grpc_resilience/server_resilience.h"

#include <utility>

#include "src/metrics/status_code_counters.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

uint64_t ServerMethodStats::CallsWithCode(int code) const {
  return calls_by_code.counts[StatusCodeCounters::Slot(code)];
}

ServerResilience::ServerResilience(std::shared_ptr<ServerResilienceImpl> impl,
                                   std::vector<std::string> warnings)
    : impl_(std::move(impl)), warnings_(std::move(warnings)) {}

ServerResilience::~ServerResilience() = default;

ServerMethodStats ServerResilience::Stats(absl::string_view method) const {
  return impl_->Stats(method);
}

std::vector<std::pair<std::string, ServerMethodStats>> ServerResilience::AllStats() const {
  return impl_->AllStats();
}

void ServerResilience::AppendMetrics(PrometheusText& text) const { impl_->AppendMetrics(text); }

void ServerResilience::AppendStatus(StatusReport& report, absl::string_view name) const {
  impl_->AppendStatus(report, name);
}

bool ServerResilience::metrics() const { return impl_->metrics(); }

PolicySet ServerResilience::policies() const { return impl_->policies(); }

absl::Status ServerResilience::SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                                              EnforcementMode mode, absl::string_view origin) {
  return impl_->SetEnforcement(method, policy, mode, origin);
}

absl::StatusOr<PolicyUpdate> ServerResilience::Update(const PolicySet& policies) {
  return impl_->Update(policies);
}

absl::StatusOr<PolicyUpdate> ServerResilience::ReloadFile(const std::string& path,
                                                          const PolicySet::LoadOptions& options) {
  return impl_->ReloadFile(path, options);
}

int64_t ServerResilience::policy_generation() const { return impl_->generation(); }

void ServerResilience::FlushEvents() { impl_->FlushEvents(); }

void ServerResilience::DrainAndShutdown(grpc::Server& server, absl::Time deadline) {
  impl_->drainer().DrainAndShutdown(server, deadline);
}

bool ServerResilience::Drain(absl::Time deadline) { return impl_->drainer().Drain(deadline); }

void ServerResilience::ReleaseRefusedCalls() { impl_->drainer().ReleaseRefusedCalls(); }

bool ServerResilience::draining() const { return impl_->drainer().draining(); }

int64_t ServerResilience::open_calls() const { return impl_->drainer().open_calls(); }

void ServerResilience::EndHoldsAt(absl::Time when) { impl_->EndHoldsAt(when); }

bool ServerResilience::SetServing(grpc::Server& server, bool serving) {
  return impl_->drainer().health().Set(server, serving);
}

absl::Status ServerResilience::RegisterGuardedService(grpc::ServerBuilder& builder,
                                                      grpc::Service* service,
                                                      absl::string_view full_name) {
  return impl_->guards().Register(builder, service, full_name);
}

}  // namespace resilience
