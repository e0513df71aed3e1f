// The throttle's admission steps before the method's own limits: the
// call's criticality, its caller key and the per-caller limits, the CPU
// gate, and whether it is a retried attempt (throttle_stage.h).

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/security/auth_context.h"
#include "src/grpc_common/metadata_keys.h"
#include "src/server_interceptors/enforced_limits.h"
#include "src/server_interceptors/throttle_stage.h"

namespace resilience {
namespace {

// The peer's key for throttle.perCaller: its authenticated identity (the
// first of its identity property's values), else its address without the
// port ("ipv4:10.0.0.7:52734" -> "ipv4:10.0.0.7"): the port changes with
// each connection, the caller does not.
std::string PeerKey(grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    const std::vector<grpc::string_ref> identity = auth->GetPeerIdentity();
    if (!identity.empty()) return std::string(identity.front().data(), identity.front().size());
  }
  std::string peer = context.peer();
  if (absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:")) {
    const size_t colon = peer.rfind(':');
    // After "ipv6:[...]" or the IPv4 address, never inside "ipvN:".
    if (colon != std::string::npos && colon > 5) peer.resize(colon);
  }
  return peer;
}

}  // namespace

void ThrottleStage::ReadCriticality(const Metadata* received) {
  std::optional<Criticality> claimed;
  if (received != nullptr) {
    const auto header = received->find(kCriticalityKey);
    if (header != received->end()) {
      if (!state_->criticality_seen.load(std::memory_order_relaxed)) {
        state_->criticality_seen.store(true, std::memory_order_relaxed);
      }
      // Compared in place against the four names; nothing is kept.
      claimed = ParseCriticality(absl::string_view(header->second.data(), header->second.size()));
      if (!claimed.has_value()) state_->criticality_invalid.fetch_add(1, std::memory_order_relaxed);
    }
  }
  level_ = state_->criticality.Resolve(claimed);
}

void ThrottleStage::ReadRetry(const Metadata* received) {
  // Only read where it matters: a scope that sheds retries.
  if (received == nullptr || !state_->limits->retry_shedding.sheds_retries()) return;
  // gRFC A6's header, else go-grpc-middleware's, which this library's
  // client sends beside it: a channel with gRPC's retries on (its default,
  // and CreateResilientChannel()'s) has its retry filter remove
  // grpc-previous-rpc-attempts from every call it did not retry itself,
  // which is every attempt our client makes.
  for (const char* key : {kPreviousAttemptsKey, kRetryAttemptKey}) {
    const auto header = received->find(key);
    if (header == received->end()) continue;
    retry_ = RetryShedding::IsRetry(absl::string_view(header->second.data(), header->second.size()));
    return;
  }
}

void ThrottleStage::ReadLoadRequest(const Metadata* received) {
  // Only a caller that reads the report pays for its trailer: our client's
  // routed attempts ask (docs/routing.md, "Load reports"); streams get none.
  load_asked_ = received != nullptr && state_->limits->load_report &&
                info_->type() == grpc::experimental::ServerRpcInfo::Type::UNARY &&
                received->find(kLoadReportRequestKey) != received->end();
}

void ThrottleStage::ReadCallerKey(const Metadata* received) {
  const ScopeLimits& limits = *state_->limits;
  if (limits.per_caller == nullptr) return;
  if (limits.caller_header.empty()) {
    peer_key_ = PeerKey(*info_->server_context());
    caller_key_ = peer_key_;
    return;
  }
  if (received == nullptr) return;
  const auto header = received->find(limits.caller_header);
  if (header != received->end()) {
    caller_key_ = absl::string_view(header->second.data(), header->second.size());
  }
}

bool ThrottleStage::AdmitCaller() {
  ScopeLimits& limits = *state_->limits;
  PerCallerLimits::Admission admission =
      limits.per_caller->TryAcquire(caller_key_, EnforcedLimits::Shares(Shares(), modes_), level_);
  if (admission.verdict == PerCallerLimits::Verdict::kAdmitted) {
    caller_slot_ = std::move(admission.slot);
    return true;
  }
  if (Shadowed(EnforcedPolicy::kPerCaller, modes_.per_caller, CallerCause(admission.verdict))) {
    return true;
  }
  // The stored key: printable and bounded whatever the caller sent.
  const std::string who = admission.default_bucket
                              ? std::string(" for callers in the default bucket")
                              : absl::StrCat(" for caller \"", admission.key, "\"");
  const PerCallerLimits::Options& o = limits.per_caller->options();
  if (admission.verdict == PerCallerLimits::Verdict::kRate) {
    owned_message_ = absl::StrCat(info_->method(), ": per-caller rate limit ", o.rate_per_second,
                                  "/s reached", who,
                                  RejectionMessages::ForLevel(Shares(), level_, ShedAsRetry()));
    RejectByRate("rate", owned_message_, admission.retry_after);
    return false;
  }
  if (admission.verdict == PerCallerLimits::Verdict::kFleetRate) {
    owned_message_ = absl::StrCat(info_->method(), ": per-caller fleet-wide rate limit ",
                                  o.fleet->rate_per_second, "/s reached", who,
                                  RejectionMessages::ForLevel(Shares(), level_, ShedAsRetry()));
    RejectByRate("global_rate", owned_message_, admission.retry_after);
    return false;
  }
  owned_message_ =
      absl::StrCat(info_->method(), ": per-caller concurrency limit ", o.max_concurrency,
                   " reached", who,
                   admission.cap < o.max_concurrency
                       ? absl::StrCat(" for ", ShedAsRetry() ? "retried " : "",
                                      CriticalityName(level_), " calls (", admission.cap,
                                      " of ", o.max_concurrency, " slots)")
                       : "");
  RejectByConcurrency(owned_message_);
  return false;
}

bool ThrottleStage::AdmitByCpu() {
  const ScopeLimits& limits = *state_->limits;
  // CRITICAL and CRITICAL_PLUS calls never read the meter.
  if (level_ != Criticality::kSheddable && level_ != Criticality::kSheddablePlus) return true;
  const double utilisation = limits.cpu_meter->Utilisation();
  if (!CpuUtilisationMeter::Sheds(utilisation, *limits.cpu_threshold, level_)) return true;
  if (Shadowed(EnforcedPolicy::kCpu, modes_.cpu, "cpu")) return true;
  state_->rejected_cpu.fetch_add(1, std::memory_order_relaxed);
  NoteRejection("cpu");
  owned_message_ = absl::StrCat(info_->method(), ": CPU utilisation ",
                                absl::StrFormat("%.2f", utilisation), " at or over the threshold ",
                                *limits.cpu_threshold, " for ", CriticalityName(level_), " calls");
  // The figure moves once a quarter window: come back after the next sample.
  Reject(owned_message_, limits.cpu_meter->window() / CpuUtilisationMeter::kSteps);
  return false;
}

}  // namespace resilience
