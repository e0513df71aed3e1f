// The public ClientResilience (grpc_resilience/client_resilience.h): a
// facade that forwards to the ClientResilienceImpl of its channel.

#include "grpc_resilience/client_resilience.h"

#include <utility>

#include "src/client_interceptors/client_resilience_impl.h"
#include "src/metrics/status_code_counters.h"

namespace resilience {

uint64_t ClientMethodStats::CallsWithCode(int code) const {
  return calls_by_code.counts[StatusCodeCounters::Slot(code)];
}

ClientResilience::ClientResilience(PolicySet policies, Options options)
    : impl_(std::make_shared<ClientResilienceImpl>(std::move(policies), std::move(options))) {}

ClientResilience::ClientResilience(std::shared_ptr<ClientResilienceImpl> impl)
    : impl_(std::move(impl)) {}

ClientResilience::~ClientResilience() = default;

ClientMethodStats ClientResilience::Stats(absl::string_view method) const {
  return impl_->Stats(method);
}

std::optional<BreakerSnapshot> ClientResilience::BreakerSnapshotOf(
    absl::string_view method) const {
  return impl_->BreakerSnapshotOf(method);
}

std::vector<std::pair<std::string, ClientMethodStats>> ClientResilience::AllStats() const {
  return impl_->AllStats();
}

std::vector<EndpointBreakerStats> ClientResilience::EndpointStats(
    absl::string_view method) const {
  return impl_->EndpointStats(method);
}

void ClientResilience::AppendMetrics(PrometheusText& text) const { impl_->AppendMetrics(text); }

const std::string& ClientResilience::name() const { return impl_->name(); }

absl::Status ClientResilience::ControlBreaker(absl::string_view method, BreakerCommand command,
                                              absl::string_view origin) {
  return impl_->ControlBreaker(method, command, origin);
}

absl::Status ClientResilience::SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                                              EnforcementMode mode, absl::string_view origin) {
  return impl_->SetEnforcement(method, policy, mode, origin);
}

absl::Status ClientResilience::ControlEndpointBreaker(absl::string_view method,
                                                     absl::string_view endpoint,
                                                     BreakerCommand command,
                                                     absl::string_view origin) {
  return impl_->ControlEndpointBreaker(method, endpoint, command, origin);
}

void ClientResilience::AppendStatus(StatusReport& report) const {
  impl_->AppendStatus(report);
  if (std::optional<RetryThrottleState> t = retry_throttle(); t.has_value()) {
    report.retry_throttles.push_back(RetryThrottleStatus{name(), t->tokens, t->max_tokens});
  }
}

std::optional<RetryThrottleState> ClientResilience::retry_throttle() const {
  return impl_->retry_throttle_state();
}

absl::StatusOr<PolicyUpdate> ClientResilience::Update(const PolicySet& policies) {
  return impl_->Update(policies);
}

absl::StatusOr<PolicyUpdate> ClientResilience::ReloadFile(const std::string& path,
                                                          const PolicySet::LoadOptions& options) {
  return impl_->ReloadFile(path, options);
}

int64_t ClientResilience::policy_generation() const { return impl_->generation(); }

}  // namespace resilience
